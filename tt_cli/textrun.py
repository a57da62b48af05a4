"""`tt translate` on real text: lines, or a whole document (srt, Markdown), through core/text.

The command decides the mode and checks the options; `run` reads the document or glossary (before
the model loads, so a bad file costs nothing and writes nothing), translates the lines or segments
with a translator — the model here (`local`: core.api.translate_text_lines, as the REPL and the
Python API run it) or a running `tt serve` (tt_cli.remote_text) — and writes each result: the plain
line, or the --json object of docs/text.md and README, with low-confidence lines named on stderr
under --flag-below.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tt_cli.output import Warnings, json_line, where

if TYPE_CHECKING:
    from core.text.documents import Document
    from core.text.options import TextOptions
    from core.text.pipeline import TextResult


def document_format(input_file: Path | None, override: str | None) -> str:
    """text (one output line per input line), srt or md: `override`, else the --input extension."""
    if input_file is None and override is None:
        return "text"  # without importing the documents' parsers: a warm call's start-up is short
    from core.text.documents import document_format as by_extension

    return by_extension(input_file, override)


def text_options(
    *, split: bool, protect: bool, names: bool = True, accents: bool = True, glossary: Path | None
) -> TextOptions:
    """The pipeline's options; the glossary is read here (a bad line: one error naming file:line)."""
    from core.text.options import TextOptions

    terms = ()
    if glossary is not None:
        from core.text.glossary import read_glossary

        terms = tuple(read_glossary(glossary))
    return TextOptions(split=split, protect=protect, names=names, accents=accents, terms=terms)


def read_document(input_file: Path | None, fmt: str) -> Document:
    """The document in --input FILE, or on stdin when no file is named (read whole: a document is
    parsed as one)."""
    from core.text.documents import parse_document, read_document

    if input_file is not None:
        return read_document(input_file, fmt)
    raw = sys.stdin.buffer.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        from core.errors import DocumentError

        lineno = raw[: exc.start].count(b"\n") + 1
        raise DocumentError(f"<stdin>:{lineno}: invalid UTF-8 (byte 0x{raw[exc.start]:02x})") from None
    return parse_document(text, fmt, "<stdin>")


@dataclass
class Report:
    """What goes to stderr beside the results: warnings (capped) and --flag-below's lines."""

    flag_below: float | None = None
    what: str = "line"  # a document's results are its segments
    warn: Warnings = field(default_factory=Warnings)
    flagged: list[int] = field(default_factory=list)

    def __call__(self, r: TextResult) -> None:
        self.warn(where(r.index, r.warnings, self.what))
        if self.flag_below is not None and r.confidence is not None and r.confidence < self.flag_below:
            self.flagged.append(r.index + 1)
            print(
                f"tt: low confidence: {self.what} {r.index + 1}: {r.confidence:.2f} < {self.flag_below:g}: {r.text}",
                file=sys.stderr,
            )

    def finish(self) -> None:
        self.warn.close()


def write_result(out: TextIO, r: TextResult, json_out: bool) -> None:
    out.write((json_line(r.to_dict()) if json_out else r.text) + "\n")


# A translator of text runs: (lines, the pipeline's options) → one TextResult (or a Served) per line, streamed.
TextTranslate = Callable[[Iterable[str], "TextOptions"], Iterator]


@dataclass(frozen=True)
class TextJob:
    """What a run on real text reads, does and writes (the options beside decoding's)."""

    input_file: Path | None
    args: list[str] | None  # the sentences given as arguments; None: read --input or stdin
    output: Path | None
    fmt: str  # text, srt or md
    settings: dict  # text_options' keywords: split, protect, names, accents, glossary
    json_out: bool
    flag_below: float | None
    errors: str  # strict or replace (--errors)


def local(load, options, coverage: bool) -> TextTranslate:
    """The translator of this process: the model load() gives, decoding with `options`."""
    from core.api import translate_text_lines

    loaded = load()
    return lambda lines, text: translate_text_lines(loaded, lines, options, text, coverage=coverage)


def run(job: TextJob, translator: Callable[[], TextTranslate]) -> None:
    """Lines or a document through core/text: the glossary and the document are read before the
    translator is made (a model loaded), so a bad file is one error line and nothing is written."""
    from core.decode.lines import lines_of

    if job.fmt != "text" and job.args is not None:
        from tt_cli.errors import EXIT_USAGE, fail

        raise fail("--format srt|md translates a document: give it with --input FILE or on stdin", EXIT_USAGE)
    text = text_options(**job.settings)
    document = read_document(job.input_file, job.fmt) if job.fmt != "text" else None
    translate = translator()
    with ExitStack() as stack:
        out = sys.stdout
        if job.output is not None:
            from core.files import open_output

            out = stack.enter_context(open_output(job.output))
        if document is not None:
            report = Report(job.flag_below, "segment")
            # headings and cues keep their missing stop
            results = list(translate(document.segments, replace(text, follow_stop=True)))
            return write_document(document, results, out, json_out=job.json_out, report=report)
        lines = lines_of(stack, job.input_file, job.args, job.errors)
        if job.input_file is not None and not (job.output is None and sys.stdout.isatty()):
            out = stack.enter_context(_progress_of(out, job.input_file))  # a file to a file or a pipe
        write_text(translate(lines, text), out, json_out=job.json_out, report=Report(job.flag_below))


@contextmanager
def _progress_of(out, input_file: Path):
    """`out`, counting the lines written on a progress bar (stderr, when it is a terminal): one output
    line per input line, so the bar counts what is translated, not what is read ahead."""
    from tt_cli.progress import line_progress

    with open(input_file, "rb") as f:
        total = sum(1 for _ in f)
    with line_progress(total) as progress:
        task = progress.add_task("translate", total=total)

        class Counted:
            def write(self, s: str) -> int:
                progress.advance(task, s.count("\n"))
                return out.write(s)

            def __getattr__(self, name):
                return getattr(out, name)

        yield Counted()


def write_text(results: Iterable, out: TextIO, *, json_out: bool, report: Report) -> None:
    """Each line's result written as soon as it is done (a pipe is answered line by line)."""
    for r in results:
        report(r)
        write_result(out, r, json_out)
        out.flush()
    report.finish()


def write_document(document: Document, results: list, out: TextIO, *, json_out: bool, report: Report) -> None:
    """The document with its text translated (everything else byte for byte), or with --json one
    object per segment."""
    for r in results:
        report(r)
    report.finish()
    if json_out:
        for r in results:
            write_result(out, r, True)
    else:
        out.write(document.render([r.text for r in results]))
