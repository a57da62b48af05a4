"""What every endpoint shares: the model, the batcher, the limits, the key check, the language pair."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from core.errors import TTError
from core.text.accents import accent_table
from core.text.protect import unknown_characters
from tt_cli.serve.announce import served_id
from tt_cli.serve.batcher import Batcher, QueueFull
from tt_cli.serve.body import ApiError, Body, read_body
from tt_cli.serve.keys import allowed, key_of
from tt_cli.serve.logs import JsonLog
from tt_cli.serve.settings import ServeSettings

LANGUAGE_NAMES = {
    "ar": "Arabic",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "it": "Italian",
    "ja": "Japanese",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ru": "Russian",
    "uk": "Ukrainian",
    "zh": "Chinese",
}


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
        # The words it gives back their accents in a sentence typed without any.
        self.accents = accent_table(translator.loaded.tokenizer)

    # -- checks, in the order a handler makes them -------------------------------------------------------
    async def accept(self, request, *, pair_required: bool, blank: bool = False) -> tuple[Body, list[str], bool]:
        """A translate request's body, with its key, its q and its language pair checked; the texts of q
        and whether q was a list (of blank lines only, when `blank`)."""
        body = await read_body(request, self.settings.max_body_bytes)
        self.authorize(request, body)
        texts, many = body.sentences("q", blank=blank)
        self.check_pair(body.text("source"), body.text("target"), required=pair_required)
        return body, texts, many

    def authorize(self, request, body: Body | None) -> None:
        if not self.settings.api_keys:
            return
        given = key_of(request.headers, body.text("api_key") if body is not None else None)
        if given is None:
            raise ApiError(
                401,
                "an API key is needed: send Authorization: Bearer KEY (or X-API-Key, or api_key in the body)",
                {"WWW-Authenticate": "Bearer"},
            )
        if not allowed(given, self.settings.api_keys):
            raise ApiError(403, "invalid API key")

    def check_pair(self, source: str | None, target: str | None, required: bool) -> None:
        ours = (self.settings.source, self.settings.target)
        pair = "→".join(ours)
        for name, value in (("source", source), ("target", target)):
            if value is None and required:
                raise ApiError(400, f"missing {name}: this server translates {pair}")
        if source == "auto":
            raise ApiError(400, f"source auto: language detection is not available; this server translates {pair}")
        given = ((source or ours[0]).lower(), (target or ours[1]).lower())
        if given != ours:
            raise ApiError(400, f"{'→'.join(given)} is not supported: this server translates {pair}")

    def check_size(self, texts: list[str], sentences: list[str]) -> None:
        chars = sum(len(t) for t in texts)
        if chars > self.settings.max_chars:
            raise ApiError(413, f"{chars} characters exceed the limit of {self.settings.max_chars} per request")
        if len(sentences) > self.settings.max_sentences:
            raise ApiError(
                413, f"{len(sentences)} sentences exceed the limit of {self.settings.max_sentences} per request"
            )

    def check_decoding(self, decoding: dict) -> None:
        try:
            replace(self.translator.options, **decoding).validate()
        except TTError as exc:
            raise ApiError(400, str(exc).replace("--", "").replace("n-best", "n_best")) from None

    # -- the work --------------------------------------------------------------------------------------
    async def translate(self, request, sentences: list[str], decoding: dict, trace: bool, finish) -> Any:
        """What `finish(results)` makes of the sentences' Results, decoded in a batch with whatever else is waiting."""
        if not hasattr(request.state, "log"):
            request.state.log = {}
        note = request.state.log  # a request of the text pipeline may decode more than once: counted together
        note["sentences"] = note.get("sentences", 0) + len(sentences)
        if not sentences:  # blank lines, markup only: nothing for the model
            return finish([])

        def finished(results: list, call: int) -> Any:
            note["decode_call"] = call
            return finish(results)

        try:
            return await self.batcher.submit(sentences, decoding, trace, finished)
        except QueueFull:
            retry = str(self.settings.retry_after_s)
            raise ApiError(503, "the server is busy (its queue is full); retry later", {"Retry-After": retry}) from None
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
        src, tgt = self.settings.source, self.settings.target
        return [
            {"code": src, "name": LANGUAGE_NAMES.get(src, src), "targets": [tgt]},
            {"code": tgt, "name": LANGUAGE_NAMES.get(tgt, tgt), "targets": []},
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
            },
            "api_keys": bool(self.settings.api_keys),  # whether the translate endpoints need one
            "cors": list(self.settings.cors_origins),
        }


def model_languages(path) -> tuple[str, str]:
    """The language pair of a model directory: its card's training languages, else tt's fr→en."""
    card = path / "card.json"
    try:
        config = json.loads(card.read_text(encoding="utf-8")).get("train_config", {}) if card.is_file() else {}
    except (OSError, ValueError):
        config = {}
    src, tgt = str(config.get("src_lang", "fr")), str(config.get("tgt_lang", "en"))
    return (tgt, src) if config.get("swap") else (src, tgt)
