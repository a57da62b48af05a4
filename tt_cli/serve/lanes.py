"""A lane: one direction the server translates — its model, its batcher, and what the text pipeline needs of
that model (the characters it cannot write, the accent table of a French source, the word aligner, the
names its vocabulary knows). A server has one lane per direction it serves; a request goes to the lane of
its (source, target) (service.Service.lane)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from typing import Any

from core.api import source_accents, text_aligner, text_constrained, with_model_placeholders
from core.card import model_languages
from core.decode.method import TranslateOptions
from core.errors import TTError
from core.text.pipeline import TextOptions
from core.text.protect import unknown_characters
from tt_cli.serve.announce import served_id
from tt_cli.serve.batcher import Batcher, Job, QueueFull
from tt_cli.serve.body import ApiError
from tt_cli.serve.settings import ServeSettings


class Lane:
    def __init__(self, translator, settings: ServeSettings) -> None:
        self.translator = translator
        self.settings = settings
        self.source, self.target = model_languages(translator.path)
        self.batcher = Batcher(translator, settings)
        self._align_rule = None
        # The text pipeline's test for characters the model cannot write (it protects them).
        self.unknown = unknown_characters(translator.loaded.tokenizer)
        # The words it gives back their accents in a sentence typed without any (a French source only).
        self.accents = source_accents(translator.loaded, self.pair)
        # Word links for the text pipeline (markup projected, a dropped span put back), as tt translate has them.
        self.aligner = text_aligner(translator.loaded)

    @property
    def pair(self) -> tuple[str, str]:
        return (self.source, self.target)

    @property
    def arrow(self) -> str:
        return f"{self.source}→{self.target}"

    @property
    def model_id(self) -> str | None:
        """What a warm `tt translate` compares with the model it would load (a quantized model is another one)."""
        return served_id(self.translator.path, self.translator.quantize)

    # -- what a request's decoding and text options are on this model --------------------------------------
    def options(self, decoding: dict) -> TranslateOptions:
        """A request's decoding: the server's (its --beam, --alpha, --greedy, --batch-size) with the request's
        fields on top, checked (a 400 in the request's words)."""
        try:
            base = self.translator.options
            return replace(base, **{"batch_size": self.settings.batch_size, **decoding}).validate()
        except TTError as exc:
            raise ApiError(400, str(exc).replace("--", "").replace("n-best", "n_best")) from None

    def text_options(self, text: TextOptions) -> TextOptions:
        """A request's text options with what the model brings (core.api.with_model_placeholders), as `tt
        translate` runs them: the names an ALL-CAPS line gets back, the model's placeholders."""
        return with_model_placeholders(self.translator.loaded, text)

    def constrained(self, options: TranslateOptions):
        """Lexically constrained beam search for a request's glossary terms, with the request's beam and α."""
        return text_constrained(self.translator.loaded, options)

    def align_rule(self):
        """The model's word-alignment rule, read once (in the worker thread, like everything model-side)."""
        if self._align_rule is None:
            from core.align.links import load_rule

            cfg = self.translator.loaded.cfg
            self._align_rule = load_rule(self.translator.path).check(cfg.n_decoder_layers, cfg.h)
        return self._align_rule

    # -- the work --------------------------------------------------------------------------------------
    def decode_here(
        self, request, sentences: list[str], options: TranslateOptions, trace: bool, finish, own_batch: bool = False
    ) -> Any:
        """What `finish(results)` makes of the sentences' Results, decoded in a batch with whatever else is waiting
        (alone, in batches of its own size, when `own_batch`); this thread (the text pipeline's) waits for it."""
        with self._answerable():
            job = self._submit(request, sentences, options, trace, finish, own_batch)
            return finish([]) if job is None else self.batcher.wait(job)

    async def decode(
        self, request, sentences: list[str], options: TranslateOptions, trace: bool, finish, own_batch: bool = False
    ) -> Any:
        """decode_here, awaited in the event loop."""
        with self._answerable():
            job = self._submit(request, sentences, options, trace, finish, own_batch)
            return finish([]) if job is None else await self.batcher.answer(job)

    def _submit(self, request, sentences: list[str], options, trace: bool, finish, own_batch: bool) -> Job | None:
        """The sentences queued as one job (counted in the request's log line); None: nothing for the model
        (blank lines, markup only)."""
        if not hasattr(request.state, "log"):
            request.state.log = {}
        note = request.state.log  # a request of the text pipeline may decode more than once: counted together
        note["sentences"] = note.get("sentences", 0) + len(sentences)
        if not sentences:
            return None

        def finished(results: list, call: int) -> Any:
            note["decode_call"] = call
            return finish(results)

        presence = getattr(request.state, "presence", None)
        return self.batcher.submit(sentences, options, trace, finished, presence, own_batch)

    @contextlib.contextmanager
    def _answerable(self):
        """The batcher's refusals as the HTTP errors a client reads."""
        try:
            yield
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

    # -- what it tells about itself --------------------------------------------------------------------
    def card(self) -> dict | None:
        path = self.translator.path / "card.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def model(self) -> dict:
        """GET /v1/model's record of this direction."""
        options = self.translator.options
        return {
            "model": str(self.translator.path),
            "source": self.source,
            "target": self.target,
            "decoding": {
                "method": options.method,
                "beam": options.beam,
                "alpha": options.alpha,
                "quantize": self.translator.quantize,
                "rerank": options.rerank,  # λ of --rerank; 0: off
            },
            "card": self.card(),
        }

    def health(self) -> dict:
        """GET /health's record of this direction."""
        return {
            "source": self.source,
            "target": self.target,
            "model": str(self.translator.path),
            "model_id": self.model_id,
            "quantize": self.translator.quantize,
            "precision": self.translator.quantize or "fp32",
            "batching": self.batcher.snapshot(),
        }
