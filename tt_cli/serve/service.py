"""What every endpoint shares: the model, the batcher, the limits, the key check, the language pair."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from core.api import source_accents, text_aligner, text_constrained
from core.decode.method import TranslateOptions
from core.errors import TTError
from core.text.language import Guess, identify, name
from core.text.protect import unknown_characters
from tt_cli.serve.announce import served_id
from tt_cli.serve.batcher import Batcher, QueueFull
from tt_cli.serve.body import ApiError, Body, read_body
from tt_cli.serve.files import Files
from tt_cli.serve.keys import allowed, key_of
from tt_cli.serve.logs import JsonLog
from tt_cli.serve.settings import ServeSettings

# What to do with a text: translate it with the model, or hand it back as it is (it is in the target language).
TRANSLATE, AS_IS = "translate", "as is"


class Service:
    def __init__(self, translator, settings: ServeSettings, log: JsonLog) -> None:
        self.translator = translator
        self.settings = settings
        self.log = log
        self.batcher = Batcher(translator, settings)
        self.started = time.monotonic()
        self._align_rule = None
        # The text pipeline's test for characters the model cannot write (it protects them).
        self.unknown = unknown_characters(translator.loaded.tokenizer)
        # The words it gives back their accents in a sentence typed without any (a French source only).
        self.accents = source_accents(translator.loaded, (settings.source, settings.target))
        self.files = Files(settings.files_kept_s)  # /translate_file's answers, until downloaded
        # Word links for the text pipeline (markup projected, a dropped span put back), as tt translate has them.
        self.aligner = text_aligner(translator.loaded)

    def constrained(self, options: TranslateOptions):
        """Lexically constrained beam search for a request's glossary terms, with the request's beam and α."""
        return text_constrained(self.translator.loaded, options)

    # -- checks, in the order a handler makes them -------------------------------------------------------
    async def read(self, request) -> Body:
        """A request's fields (query string and body), its key checked."""
        body = await read_body(request, self.settings.max_body_bytes, self.settings.read_timeout_s)
        self.authorize(request, body)
        return body

    async def accept(self, request, *, blank: bool = False) -> tuple[Body, list[str], bool]:
        """A translate request's fields, with its key checked; the texts of q and whether q was a list (of
        blank lines only, when `blank`)."""
        body = await self.read(request)
        texts, many = body.sentences("q", blank=blank)
        return body, texts, many

    def authorize(self, request, body: Body | None) -> None:
        if not self.settings.api_keys:
            return
        given = key_of(request.headers, body.text("api_key") or body.text("apiKey") if body is not None else None)
        if given is None:
            raise ApiError(
                401,
                "an API key is needed: send Authorization: Bearer KEY (or X-API-Key, or api_key in the body)",
                {"WWW-Authenticate": "Bearer"},
                lt_status=400,
            )
        if not allowed(given, self.settings.api_keys):
            raise ApiError(403, "invalid API key")

    def route(self, source: str | None, target: str | None, required: bool = True, as_is: bool = True) -> str:
        """TRANSLATE when source→target is the model's pair, AS_IS when source is target and `as_is` (a text
        already in the language asked for comes back as it is, as LibreTranslate answers); else a 400
        naming the pair this server translates. Left out (where not `required`): the model's languages."""
        ours = (self.settings.source, self.settings.target)
        for field, value in (("source", source), ("target", target)):
            if value is None and required:
                raise ApiError(400, f"missing {field}: this server translates {self.pair}")
        given = ((source or ours[0]).lower(), (target or ours[1]).lower())
        if given == ours:
            return TRANSLATE
        if as_is and given[0] == given[1] and given[0] in ours:
            return AS_IS
        raise ApiError(400, f"{'→'.join(given)} is not supported: this server translates {self.pair}")

    @property
    def pair(self) -> str:
        return f"{self.settings.source}→{self.settings.target}"

    def detect(self, text: str) -> list[Guess]:
        """The languages this server has, the likeliest for `text` first (core.text.language)."""
        return identify(text, (self.settings.source, self.settings.target))

    def check_size(self, texts: list[str], sentences: list[str]) -> None:
        chars = sum(len(t) for t in texts)
        if chars > self.settings.max_chars:
            raise ApiError(
                413, f"{chars} characters exceed the limit of {self.settings.max_chars} per request", lt_status=400
            )
        if len(sentences) > self.settings.max_sentences:
            raise ApiError(
                413,
                f"{len(sentences)} sentences exceed the limit of {self.settings.max_sentences} per request",
                lt_status=400,
            )

    def options(self, decoding: dict) -> TranslateOptions:
        """A request's decoding: the server's (its --beam, --alpha, --greedy, --batch-size) with the request's
        fields on top, checked (a 400 in the request's words)."""
        try:
            return replace(self.translator.options, **{"batch_size": self.settings.batch_size, **decoding}).validate()
        except TTError as exc:
            raise ApiError(400, str(exc).replace("--", "").replace("n-best", "n_best")) from None

    # -- the work --------------------------------------------------------------------------------------
    async def decode(
        self, request, sentences: list[str], options: TranslateOptions, trace: bool, finish, own_batch: bool = False
    ) -> Any:
        """What `finish(results)` makes of the sentences' Results, decoded in a batch with whatever else is waiting
        (alone, in batches of its own size, when `own_batch`)."""
        if not hasattr(request.state, "log"):
            request.state.log = {}
        note = request.state.log  # a request of the text pipeline may decode more than once: counted together
        note["sentences"] = note.get("sentences", 0) + len(sentences)
        if not sentences:  # blank lines, markup only: nothing for the model
            return finish([])

        def finished(results: list, call: int) -> Any:
            note["decode_call"] = call
            return finish(results)

        presence = getattr(request.state, "presence", None)
        try:
            return await self.batcher.submit(sentences, options, trace, finished, presence, own_batch)
        except QueueFull:
            retry = str(self.settings.retry_after_s)
            raise ApiError(
                503, "the server is busy (its queue is full); retry later", {"Retry-After": retry}, lt_status=429
            ) from None
        except TimeoutError:
            raise ApiError(
                504, f"not translated within the server's timeout of {self.settings.timeout_s:g} s"
            ) from None
        except TTError as exc:
            raise ApiError(400, str(exc)) from None

    def align_rule(self):
        """The model's word-alignment rule, read once (in the worker thread, like everything model-side)."""
        if self._align_rule is None:
            from core.align.links import load_rule

            cfg = self.translator.loaded.cfg
            self._align_rule = load_rule(self.translator.path).check(cfg.n_decoder_layers, cfg.h)
        return self._align_rule

    # -- what the server tells about itself -----------------------------------------------------------
    def languages(self) -> list[dict]:
        """What this server translates: the model's pair (LibreTranslate's /languages)."""
        src, tgt = self.settings.source, self.settings.target
        return [
            {"code": src, "name": name(src), "targets": [tgt]},
            {"code": tgt, "name": name(tgt), "targets": []},
        ]

    def card(self) -> dict | None:
        path = self.translator.path / "card.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def health(self) -> dict:
        import torch

        return {
            "status": "ok",
            "model": str(self.translator.path),
            # What a warm `tt translate` compares with its --model (a quantized model is another one).
            "model_id": served_id(self.translator.path, self.translator.quantize),
            "quantize": self.translator.quantize,
            "source": self.settings.source,
            "target": self.settings.target,
            "threads": torch.get_num_threads(),
            "uptime_s": round(time.monotonic() - self.started, 1),
            "batching": self.batcher.snapshot(),
            "limits": {
                "max_chars": self.settings.max_chars,
                "max_sentences": self.settings.max_sentences,
                "timeout_s": self.settings.timeout_s,
                "read_timeout_s": self.settings.read_timeout_s,
            },
            "api_keys": bool(self.settings.api_keys),  # whether the translate endpoints need one
            "cors": list(self.settings.cors_origins),
        }
