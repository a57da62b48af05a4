"""What every endpoint shares: the lanes (one per direction served), the limits, the key check, the routing
of a request to its lane."""

from __future__ import annotations

import time
from collections.abc import Sequence

from core.text.language import Guess, identify, name
from tt_cli.serve.body import ApiError, Body, read_body
from tt_cli.serve.files import Files
from tt_cli.serve.keys import allowed, key_of
from tt_cli.serve.lanes import Lane
from tt_cli.serve.logs import JsonLog
from tt_cli.serve.settings import ServeSettings


class Service:
    def __init__(self, translators: Sequence, settings: ServeSettings, log: JsonLog) -> None:
        """One lane per translator, the first the default (a /v1/translate that names neither language)."""
        self.lanes = [Lane(t, settings) for t in translators]
        pairs = [lane.pair for lane in self.lanes]
        if not pairs or len(set(pairs)) < len(pairs):
            raise ValueError(f"a server needs one model per direction, got {', '.join(map('→'.join, pairs))}")
        self.settings = settings
        self.log = log
        self.started = time.monotonic()
        self.files = Files(settings.files_kept_s)  # /translate_file's answers, until downloaded

    @property
    def default(self) -> Lane:
        return self.lanes[0]

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

    def lane(self, source: str | None, target: str | None, required: bool = True, as_is: bool = True) -> Lane | None:
        """The lane that translates source→target; None when source is target and `as_is` (a text already in the
        language asked for comes back as it is, as LibreTranslate answers); else a 400 naming the pairs this
        server translates. A language left out (where not `required`) is the one lane that has the other, else
        the default lane's."""
        for field, value in (("source", source), ("target", target)):
            if value is None and required:
                raise ApiError(400, f"missing {field}: this server translates {self.pairs}")
        given = (source.lower() if source else None, target.lower() if target else None)
        fits = [lane for lane in self.lanes if given[0] in (None, lane.source) and given[1] in (None, lane.target)]
        chosen = self.default if self.default in fits else fits[0] if fits else None
        if chosen is not None:
            return chosen
        wanted = (given[0] or self.default.source, given[1] or self.default.target)
        if as_is and wanted[0] == wanted[1] and wanted[0] in self.languages_served:
            return None
        raise ApiError(400, f"{'→'.join(wanted)} is not supported: this server translates {self.pairs}")

    @property
    def pairs(self) -> str:
        """The directions served, as an error message names them: "fr→en, en→fr"."""
        return ", ".join(lane.arrow for lane in self.lanes)

    @property
    def languages_served(self) -> tuple[str, ...]:
        """Every language a lane reads or writes, in the lanes' order."""
        return tuple(dict.fromkeys(code for lane in self.lanes for code in lane.pair))

    def detect(self, text: str) -> list[Guess]:
        """The languages this server has, the likeliest for `text` first (core.text.language)."""
        return identify(text, self.languages_served)

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

    # -- what the server tells about itself -----------------------------------------------------------
    def languages(self) -> list[dict]:
        """What this server translates (LibreTranslate's /languages): each language with the targets it has."""
        return [
            {"code": code, "name": name(code), "targets": [lane.target for lane in self.lanes if lane.source == code]}
            for code in self.languages_served
        ]

    def batching(self) -> dict:
        """The batchers' counters, summed over the lanes (the largest batch: the largest of any)."""
        snapshots = [lane.batcher.snapshot() for lane in self.lanes]
        total = {key: sum(s[key] for s in snapshots) for key in snapshots[0]}
        return (
            total
            | {key: snapshots[0][key] for key in ("queue_size", "batch_size", "batch_wait_ms")}
            | {"largest_batch": max(s["largest_batch"] for s in snapshots)}
        )

    def health(self) -> dict:
        import torch

        default = self.default.health()
        return {
            "status": "ok",
            # The default direction's model, as a server of one model has always said it...
            **{key: default[key] for key in ("model", "model_id", "quantize", "source", "target")},
            "directions": [lane.health() for lane in self.lanes],  # ...and every direction it serves
            "threads": torch.get_num_threads(),
            "uptime_s": round(time.monotonic() - self.started, 1),
            "batching": self.batching(),
            "limits": {
                "max_chars": self.settings.max_chars,
                "max_sentences": self.settings.max_sentences,
                "timeout_s": self.settings.timeout_s,
                "read_timeout_s": self.settings.read_timeout_s,
            },
            "api_keys": bool(self.settings.api_keys),  # whether the translate endpoints need one
            "cors": list(self.settings.cors_origins),
        }
