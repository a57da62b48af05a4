"""Warm shell calls: `tt translate` sends its lines to a running `tt serve` instead of loading the model.

    which server: --local or TT_SERVER= (empty): none · $TT_SERVER: that one · else the servers this
    user announced (tt_cli.serve.announce) for the very model the command would load
    ──GET /health: alive, that model among its directions, no key needed──▶ Warm
    lines ──the local path's chunks──▶ POST /v1/translate {q, the command's decoding, batch_size, the
          direction's source and target}
          ──▶ one result per line: the --json record the server built, warnings numbered as here

This module has the connection, the chunking (`served`) and the model views (--raw, --n-best,
--attention, --align: raw true, one Remote per line); tt_cli.remote_text sends the default text
run and the prompt's lines through the same connection.

The server decodes each chunk on its own in batches of --batch-size, as the command would, so every
record is the one `tt translate` prints locally, to the last digit. What the server cannot take — a
chunk past its size limits, options it refuses, a server gone mid-way — is translated here, with
the model loaded on first need, so the output is the same either way and nothing is lost.

Nothing here imports torch until a chunk has to be translated locally: that is the point.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from core.decode.lines import chunks
from core.decode.method import TranslateOptions
from core.decode.records import Alternative
from core.errors import TTError
from tt_cli.output import Warnings, json_line, where, write_n_best, write_plain
from tt_cli.serve.announce import served_id, servers

if TYPE_CHECKING:
    from tt_cli.serve.client import Client

# The decoding options a request sends (POST /v1/translate's names are TranslateOptions's); a seed left out: none.
DECODING_FIELDS = ("beam", "alpha", "method", "temperature", "top_k", "top_p", "seed", "n_best", "batch_size")
HEALTH_TIMEOUT_S = 2.0  # a server that does not say it is alive within this is passed over
BUSY_RETRIES = 20  # a 503 (queue full) is retried after its Retry-After, this many times


@dataclass(frozen=True)
class Request:
    """What `tt translate` asks for, in the words of POST /v1/translate."""

    model: Path | None  # --model (None: $TT_MODEL, else the shipped model)
    options: TranslateOptions  # the command's decoding, defaults, --n-best and --batch-size included
    attention: str = "none"  # with --json: none, cross or all
    align: bool = False
    json: bool = False
    threads: int = 0  # --threads, and whether the lines are a few arguments: for a fallback here
    few: bool = False
    device: str = "auto"  # where a fallback here (or a rank of a torchrun) runs the model

    def body(self, lines: list[str]) -> dict:
        """The model alone on each line (raw): the record of `tt translate --json --raw`."""
        return {**self.decoding_body(lines), "raw": True, "attention": self.attention, "align": self.align}

    def decoding_body(self, lines: list[str]) -> dict:
        o = self.options
        decoding = {name: getattr(o, name) for name in DECODING_FIELDS}
        return {"q": lines, **{name: value for name, value in decoding.items() if value is not None}}

    @property
    def servable(self) -> bool:
        """A seeded sample draws per batch of the whole run (core.decode.translate): a chunk sent on its
        own would restart the draws, so it is decoded here."""
        return not (self.options.method == "sample" and self.options.seed is not None)


@dataclass
class Record:
    """One translated line as a server recorded it: its --json object."""

    record: dict

    @property
    def index(self) -> int:
        return self.record["index"]

    @property
    def text(self) -> str:
        return self.record["translation"]


@dataclass
class Remote(Record):
    """The model's record of one line, from a server (or the fallback here); the writers read it as they
    read a core Translation."""

    warnings: list[str] = field(default_factory=list)  # messages about the line; the writer says which line

    @property
    def n_best(self) -> list[Alternative]:
        return [
            Alternative(a["translation"], [], a.get("tokens", []), a.get("token_logprobs", []), a["score"])
            for a in self.record.get("n_best", [])
        ]


def write_record(out: TextIO, t: Remote, attribution=None) -> None:
    out.write(json_line(t.record) + "\n")


class ServerError(TTError):
    """The server answered with an error (`status`), or stopped answering (status 0)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Warm:
    """A running server that serves the model a command asked for: as one of its directions, which every
    request names (source, target)."""

    def __init__(self, client: Client, url: str, health: dict, direction: dict) -> None:
        self.url = url
        self.direction = {key: direction[key] for key in ("source", "target") if key in direction}
        limits = health.get("limits", {})
        self.max_sentences = int(limits.get("max_sentences", 0))
        self.max_chars = int(limits.get("max_chars", 0))
        client.close()  # reopened on the next request with the longer timeout (loopback: no cost)
        client.timeout = float(limits.get("timeout_s", 60.0)) + 10  # the server answers 504 before this
        self.client = client

    def takes(self, lines: list[str]) -> bool:
        return len(lines) <= self.max_sentences and sum(len(line) for line in lines) <= self.max_chars

    def post(self, body: dict, keys: tuple[str, ...] = ("translations",)) -> dict:
        """POST /v1/translate, answered with `keys`; a full queue is waited out. ServerError: refused,
        gone, or an answer without them (a server of another version)."""
        for _ in range(BUSY_RETRIES):
            try:
                reply = self.client.post("/v1/translate", {**body, **self.direction})
            except (OSError, ValueError) as exc:
                raise ServerError(f"the server at {self.url} stopped answering ({exc})") from None
            if reply.status != 503:
                break
            time.sleep(float(reply.headers.get("retry-after", "1") or 1))
        try:
            data = reply.json()
        except ValueError:
            data = {}
        if reply.status != 200 or not isinstance(data, dict):
            error = data.get("error", "?") if isinstance(data, dict) else "?"
            raise ServerError(f"the server at {self.url} answered {reply.status}: {error}", reply.status)
        if not all(key in data for key in keys):
            raise ServerError(
                f"the server at {self.url} answered without {' and '.join(keys)} (another version of tt?)"
            )
        return data


def connect(request: Request, precision: str | None = None) -> Warm | None:
    """The server to send `request` to, or None: translate here. The server must serve the model in the precision
    the command would run it in here: `precision` where asked, else its card's (core.card.default_precision)."""
    if not request.servable:
        return None
    named = os.environ.get("TT_SERVER")
    if named is not None and not named.strip():
        return None  # TT_SERVER= : translate here, whatever runs
    from core.card import quantize_mode

    directory = _model_dir(request.model)
    wanted = served_id(directory, quantize_mode(precision, directory))
    if wanted is None:
        return None  # no model there: the local path says so
    if named:
        return _check(named.strip(), wanted, say=True)
    for info in servers():
        if wanted in info.get("model_ids", [info.get("model_id")]) and not info.get("api_keys"):
            warm = _check(info["url"], wanted, say=False)
            if warm is not None:
                return warm
    return None


def _model_dir(model: Path | None) -> Path:
    """The directory the command would load."""
    from core.card import default_model_dir

    return model if model is not None else default_model_dir()


def _check(url: str, wanted: str, say: bool) -> Warm | None:
    """A Warm for `url` when it answers /health in time, for this model, without a key."""
    from tt_cli.serve.client import Client  # http.client: paid only when there is a server to ask

    client = Client(url, timeout=HEALTH_TIMEOUT_S)
    try:
        reply = client.get("/health")
        health = reply.json() if reply.status == 200 else None
        problem = None
    except (OSError, ValueError) as exc:
        health, problem = None, f"no answer ({exc})"
    if not isinstance(health, dict) or health.get("status") != "ok":
        problem = problem or "not a tt server (GET /health)"
    elif health.get("api_keys"):
        problem = "it needs an API key"
    elif (direction := _serving(health, wanted)) is None:
        problem = f"it serves another model ({health.get('model')}, {health.get('quantize') or 'fp32'})"
    if problem is None:
        return Warm(client, url, health, direction)
    client.close()
    if say:
        print(f"tt: warning: $TT_SERVER={url}: {problem}; translating here", file=sys.stderr)
    return None


def _serving(health: dict, wanted: str) -> dict | None:
    """The direction of a server's /health that serves the model `wanted` (one of its directions, or the
    one model of a server that lists none), or None."""
    for direction in health.get("directions", [health]):
        if isinstance(direction, dict) and direction.get("model_id") == wanted:
            return direction
    return None


def translations(warm: Warm, request: Request, lines: Iterable[str]) -> Iterator[Remote]:
    """One Remote per line, in order, streamed: each chunk of lines as the local path would gather it,
    by the server when it takes it, else here."""
    return served(warm, request, lines, request.body, _remotes, Local(request).translate)


def served(warm: Warm | None, request: Request, lines: Iterable[str], body, received, here, keys=("translations",)):
    """One result per line, in order, streamed: each chunk of lines as the local path would gather it
    (its batch size × 4, what is there) POSTed as body(chunk), its answer (with `keys`) read by
    received(data, start); here(chunk, start) translates a chunk the server does not take, and every
    chunk after one it refused or failed."""
    index = 0
    for chunk in chunks(lines, request.options.batch_size * 4):
        data = None
        if warm is not None and warm.takes(chunk):
            try:
                data = warm.post(body(chunk), keys)
            except ServerError as exc:
                if exc.status != 400:  # a 400 is options it refuses: the check here says it in the command's words
                    print(f"tt: warning: {exc}; translating here", file=sys.stderr)
                warm = None
        yield from (here(chunk, index) if data is None else received(data, index))
        index += len(chunk)


def _remotes(data: dict, start: int) -> Iterator[Remote]:
    warnings: dict[int, list[str]] = {}
    for w in data.get("warnings", []):
        warnings.setdefault(w["index"], []).append(w["message"])
    for i, record in enumerate(data["translations"]):
        record["index"] = start + i
        yield Remote(record, warnings.get(i, []))


class Local:
    """The fallback: the model of the request, loaded on first need, making the server's records."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self._loaded = self._options = self._rule = None

    def translate(self, chunk: list[str], start: int) -> Iterator[Remote]:
        from core.decode.translate import translate_lines
        from tt_cli.output import translation_json

        loaded, options = self.load()
        for t in translate_lines(loaded, chunk, options):
            t.index += start
            yield Remote(translation_json(t, self.request.attention, self._rule, loaded.model), t.warnings)

    def load(self):
        """(the model, the decoding options), loaded on the first call."""
        if self._loaded is None:
            from dataclasses import replace

            from tt_cli.options import default_mode, load_model_in, set_threads

            r = self.request
            self._options = replace(r.options, with_attention=r.attention != "none" or r.align).validate()
            set_threads(r.threads, few=r.few)
            self._loaded = load_model_in(r.model, r.device, default_mode(r.model, r.device))  # as the server runs it
            if r.align:
                from core.align.links import load_rule

                cfg = self._loaded.cfg
                self._rule = load_rule(self._loaded.path).check(cfg.n_decoder_layers, cfg.h)
        return self._loaded, self._options


def writer(request: Request):
    """The writer of a warm run's output format (each reads a Remote)."""
    if request.json:
        return write_record
    return write_n_best if request.options.n_best > 1 else write_plain


def run(warm: Warm, request: Request, args: list[str] | None, input_file, output, errors: str = "strict") -> None:
    """`tt translate` by `warm`: the lines of --input, the arguments, or stdin (args None), written to
    --output (atomically) or stdout, warnings on stderr — as the command writes them."""
    from contextlib import ExitStack

    from core.decode.lines import lines_of

    write, warn = writer(request), Warnings()
    with ExitStack() as stack:
        lines = lines_of(stack, Path(input_file) if input_file is not None else None, args, errors)
        if output is None:
            out = sys.stdout
        else:
            from core.files import open_output

            out = stack.enter_context(open_output(output))
        for t in translations(warm, request, lines):
            warn(where(t.index, t.warnings))
            write(out, t)
            out.flush()
    warn.close()


# ------------------------------------------------------------------------------ the prompt (tt translate -I)
def connect_prompt(model: Path | None, device: str, precision: str | None = None) -> Warm | None:
    """The server `tt translate -I` sends its lines to, or None (then it loads the model): one that serves it in
    the precision the prompt runs it in here (`precision`, else the card's), so its lines read the same either way."""
    if device != "auto":
        return None
    return connect(Request(model, TranslateOptions()), precision=precision)
