"""`tt translate` on real text: lines, or a whole document (srt, Markdown), through core/text.

The command decides the mode and checks the options; this module reads the document or glossary
(before the model loads, so a bad file costs nothing and writes nothing), runs the pipeline through
`core.api.translate_text_lines` (the REPL and the Python API run the same), and writes each result:
the plain line, or the --json object of docs/text.md and README, with low-confidence lines named on
stderr under --flag-below.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tt_cli.output import MAX_WARNINGS, json_line

if TYPE_CHECKING:
    from core.text.documents import Document
    from core.text.pipeline import TextOptions, TextResult

DOCUMENT_FORMATS = ("srt", "md")


def document_format(input_file: Path | None, override: str | None) -> str:
    """text (one output line per input line), srt or md: `override`, else the --input extension."""
    from core.text.documents import document_format as by_extension

    fmt = by_extension(input_file, override)
    return fmt if fmt in DOCUMENT_FORMATS else "text"


def text_options(*, split: bool, protect: bool, glossary: Path | None) -> TextOptions:
    """The pipeline's options; the glossary is read here (a bad line: one error naming file:line)."""
    from core.text.glossary import read_glossary
    from core.text.pipeline import TextOptions

    terms = tuple(read_glossary(glossary)) if glossary is not None else ()
    return TextOptions(split=split, protect=protect, terms=terms)


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
    warned: int = 0
    flagged: list[int] = field(default_factory=list)

    def __call__(self, r: TextResult) -> None:
        for w in r.warnings:
            self.warned += 1
            if self.warned <= MAX_WARNINGS:
                print(f"tt: warning: {self.what} {r.index + 1}: {w}", file=sys.stderr)
        if self.flag_below is not None and r.confidence is not None and r.confidence < self.flag_below:
            self.flagged.append(r.index + 1)
            print(
                f"tt: low confidence: {self.what} {r.index + 1}: {r.confidence:.2f} < {self.flag_below:g}: {r.text}",
                file=sys.stderr,
            )

    def finish(self) -> None:
        if self.warned > MAX_WARNINGS:
            print(f"tt: warning: {self.warned - MAX_WARNINGS} more warning(s) not shown", file=sys.stderr)


def write_result(out: TextIO, r: TextResult, json_out: bool) -> None:
    out.write((json_line(r.to_dict()) if json_out else r.text) + "\n")


def run_text(loaded, lines, options, text: TextOptions, out: TextIO, *, json_out: bool, report: Report) -> None:
    """Each line through the pipeline, written as soon as it is done (a pipe is answered line by line)."""
    from core.api import translate_text_lines

    for r in translate_text_lines(loaded, lines, options, text, coverage=json_out):
        report(r)
        write_result(out, r, json_out)
        out.flush()
    report.finish()


def run_document(
    loaded, document: Document, options, text: TextOptions, out: TextIO, *, json_out: bool, report: Report
) -> None:
    """The document with its text translated (everything else byte for byte), or with --json one
    object per segment."""
    import dataclasses

    from core.api import translate_text_lines

    text = dataclasses.replace(text, follow_stop=True)  # headings and cues keep their missing stop
    results = list(translate_text_lines(loaded, document.segments, options, text, coverage=json_out))
    for r in results:
        report(r)
    report.finish()
    if json_out:
        for r in results:
            write_result(out, r, True)
    else:
        out.write(document.render([r.text for r in results]))
