"""Warm text runs: the default `tt translate` (sentences split, spans protected, case kept, glossary,
documents) and its prompt, translated by a running `tt serve` (tt_cli.remote finds it).

    chunk of lines ──POST /v1/translate {q, decoding, batch_size, split, protect, terms, follow_stop,
    coverage}──▶ the text pipeline's --json record of each line ──▶ Served (read as a TextResult)

The server runs core.api.text_chunks on each chunk, in the batches the command would make, so the
records are those `tt translate` builds here; the glossary goes as its terms, a document is read
here and only its segments travel. What the server does not take is translated here, through
core.api.translate_text_lines, chunk by chunk as it would have been. No torch until then.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tt_cli import textrun
from tt_cli.remote import Local, Record, Request, ServerError, Warm, served
from tt_cli.textrun import TextJob

if TYPE_CHECKING:
    from core.decode.translate import Translation
    from core.text.options import TextOptions
    from core.text.results import TextResult


@dataclass
class Served(Record):
    """The text pipeline's record of one line; the writers and the Report read it as they read a core
    TextResult."""

    confidence: float | None = None  # the line's confidence, unrounded (--flag-below compares it)

    @property
    def warnings(self) -> list[str]:
        return self.record["warnings"]

    def to_dict(self) -> dict:
        return self.record


ANSWER = ("translations", "confidences")  # what the text pipeline's answer holds (the model's has no confidences)


def body(request: Request, lines: list[str], text: TextOptions) -> dict:
    """POST /v1/translate's body for these lines through the pipeline with `text`; coverage with --json."""
    return {
        **request.decoding_body(lines),
        "split": text.split,
        "protect": text.protect,
        "names": text.names,
        "case": text.case,
        "accents": text.accents,
        "follow_stop": text.follow_stop,
        "terms": [list(pair) for pair in text.terms],
        "coverage": request.json,
    }


def received(data: dict, start: int) -> Iterator[Served]:
    for i, (record, confidence) in enumerate(zip(data["translations"], data["confidences"])):
        record["index"] = start + i
        yield Served(record, confidence)


class WarmText:
    """`translate(lines, text)` for tt_cli.textrun: the server's results, else the model here's."""

    def __init__(self, warm: Warm | None, request: Request) -> None:
        self.warm, self.request, self.local = warm, request, Local(request)

    def __call__(self, lines: Iterable[str], text: TextOptions) -> Iterator:
        return served(
            self.warm,
            self.request,
            lines,
            lambda chunk: body(self.request, chunk, text),
            received,
            lambda chunk, start: self.here(chunk, start, text),
            ANSWER,
        )

    def here(self, chunk: list[str], start: int, text: TextOptions) -> Iterator:
        from core.api import translate_text_lines

        loaded, options = self.local.load()
        for r in translate_text_lines(loaded, chunk, options, text, coverage=self.request.json):
            r.index += start
            yield r


def run(warm: Warm, request: Request, job: TextJob) -> None:
    """`tt translate`'s text run of `job` by `warm` (what the server does not take, here)."""
    from core.files import check_output

    if job.output is not None:
        check_output(job.output)  # before the glossary and the document, as the local run checks it
    textrun.run(job, lambda: WarmText(warm, request))


# ------------------------------------------------------------------------------ the prompt (tt translate -I)
def prompt_line(repl, line: str) -> Served | None:
    """One line of the prompt translated by its server with the prompt's options; None when the
    server cannot (the prompt stops using it, and translates here from then on)."""
    from core.text.options import TextOptions

    s = repl.settings
    request = Request(None, replace(s.options, n_best=1), json=s.json)
    try:
        return next(received(repl.warm.post(body(request, [line], s.text or TextOptions()), ANSWER), 0))
    except ServerError as exc:
        print(f"tt: warning: {exc}; translating here", file=sys.stderr)
        repl.warm = None
        return None


def last_sentence(line: Served | TextResult, loaded) -> Translation:
    """The Translation of the line's last sentence (what the model translated: its model_input),
    rebuilt with the model here from the line's --json record (a server's, or the pipeline's here), for
    :attention and :inspect."""
    from core.decode.source import prepare_source
    from core.decode.translate import Translation

    sentence = line.to_dict()["sentences"][-1]
    source = prepare_source(loaded.tokenizer, sentence["model_input"], loaded.cfg.max_len)
    return Translation(
        index=line.index,
        source=sentence["model_input"],
        text=sentence["model_output"],
        token_ids=[loaded.tokenizer.piece_id(p) for p in sentence["tokens"]],
        pieces=sentence["tokens"],
        token_logprobs=sentence["token_logprobs"],
        source_tokens=source.ids,
        truncated=source.truncated,
    )
