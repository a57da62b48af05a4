"""Documents: subtitles (srt), Markdown and plain text → segments to translate → the document again.

    text ──parse_document──▶ Document(segments, regions) ──translate the segments──▶ render ──▶ text

A Document keeps the file's text whole and the (start, end) region of each segment in it; render
puts each translation in its region and copies every other character as it was, so numbering,
timestamps, blank lines, code blocks, list markers and line endings come back byte for byte.
Parsing is the parsers' (srt, markdown-it-py); the regions are where they say the text is.

- srt: each cue's text is one segment (its lines joined; a cue whose lines all start with a dash is
  a dialogue, one segment per line, the dashes kept out); the translation is broken back into as many lines as the cue
  had, at the spaces nearest to even lengths.
- Markdown: paragraphs and headings are segments; code blocks, HTML blocks and tables stay as they
  are; inside a segment inline code, URLs and links are protected (core.text.protect), and each
  link's text is a segment of its own put back between the link's brackets — but a link of plain
  words, which the pipeline reads inside its sentence (core.text.markup.read_in_sentence).
- plain text: each paragraph (lines up to a blank line) is one segment, written as one line.
- lines (`parse_lines`, what a server is sent): each line is a segment, its blank edges kept.
- HTML (`parse_html`): each run of text between block-level tags is a segment; inline tags (<b>, <a>,
  <span>, …) stay inside it, where core.text.protect copies them; entities are decoded for the
  model and the translation is escaped again around the source's own tags. Comments and the insides
  of <script>, <style>, <pre> and <textarea> are kept byte for byte.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import DocumentError
from core.text.markup import read_in_sentence
from core.text.spans import MARKDOWN_LINK

FORMATS = ("text", "srt", "md")
_EXTENSIONS = {".srt": "srt", ".md": "md", ".markdown": "md", ".txt": "text"}


@dataclass
class Document:
    text: str  # the file's text, as read
    format: str
    segments: list[str] = field(default_factory=list)  # what to translate, one line each
    regions: list[tuple[int, int]] = field(default_factory=list)  # where segment i's translation goes
    lines: list[int] = field(default_factory=list)  # how many lines segment i's translation is broken into
    newline: str = "\n"
    # (segment holding the link, the link's source text, the segment translating its text)
    links: list[tuple[int, str, int]] = field(default_factory=list)
    # HTML: the tags of segment i, written as they are; the rest of its translation is escaped
    markup: list[frozenset[str]] = field(default_factory=list)

    def render(self, translations: list[str]) -> str:
        """The document with segment i's region replaced by translations[i] (broken into lines as the
        source was); link texts go back inside their links."""
        if len(translations) != len(self.segments):
            raise ValueError(f"{len(translations)} translations for {len(self.segments)} segments")
        translations = list(translations)
        for holder, link, inner in self.links:
            translated = _retext_link(link, translations[inner])
            if link in translations[holder]:
                translations[holder] = translations[holder].replace(link, translated, 1)
        out, last = [], 0
        for i, ((a, b), text, n) in enumerate(zip(self.regions, translations, self.lines)):
            if a < 0:  # a link's text: it went into its paragraph above
                continue
            out.append(self.text[last:a])
            if self.format == "html":
                text = _escape_html(text, self.markup[i])
            out.append(self.newline.join(break_lines(text, n)))
            last = b
        out.append(self.text[last:])
        return "".join(out)


def break_lines(text: str, n: int) -> list[str]:
    """`text` in at most `n` lines of near-even length, broken at spaces."""
    words = text.split(" ")
    if n <= 1 or len(words) < 2:
        return [text]
    lines, rest = [], words
    for k in range(n, 1, -1):
        remaining = " ".join(rest)
        target = len(remaining) / k
        best, best_gap, run = 1, None, 0
        for i in range(1, len(rest)):
            run += len(rest[i - 1]) + (1 if i > 1 else 0)
            gap = abs(run - target)
            if best_gap is None or gap < best_gap:
                best, best_gap = i, gap
        lines.append(" ".join(rest[:best]))
        rest = rest[best:]
        if len(rest) < 2:
            break
    lines.append(" ".join(rest))
    return [line for line in lines if line] or [text]


def _retext_link(link: str, text: str) -> str:
    """`[old](target)` → `[text](target)`."""
    close = _link_text_end(link)
    return link[: link.index("[") + 1] + text + link[close:]


def _link_text_end(link: str) -> int:
    depth = 0
    for i, ch in enumerate(link):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i
    return len(link)


# -------------------------------------------------------------------------------------------- srt
def _parse_srt(text: str, name: str) -> Document:
    import srt

    try:
        list(srt.parse(text))
    except srt.SRTParseError as exc:
        skipped = len(exc.unmatched_content) - len(exc.unmatched_content.lstrip())
        lineno = text[: exc.expected_start + skipped].count("\n") + 1
        bad = exc.unmatched_content.strip().splitlines()[0][:60] if exc.unmatched_content.strip() else ""
        raise DocumentError(f"{name}:{lineno}: not a subtitle block (number, timestamps, text): {bad!r}") from None
    except ValueError as exc:
        raise DocumentError(f"{name}: {exc}") from None
    doc = Document(text, "srt", newline="\r\n" if "\r\n" in text else "\n")
    for match in srt.SRT_REGEX.finditer(text):
        a, b = match.span(5)  # the cue's text
        body = text[a:b]
        lines = body.splitlines()
        if len(lines) > 1 and all(line.lstrip().startswith(("-", "–", "—")) for line in lines):
            pos = a
            for line in body.splitlines(keepends=True):
                content = line.rstrip("\r\n")
                speech = content.lstrip().lstrip("-–—").lstrip()  # the dash stays the file's, not the model's
                if speech:
                    _add(doc, speech, pos + len(content) - len(speech), pos + len(content), 1)
                pos += len(line)
        elif body.strip():
            _add(doc, " ".join(line.strip() for line in lines if line.strip()), a, b, len(lines))
    return doc


def _add(doc: Document, segment: str, a: int, b: int, n_lines: int) -> int:
    doc.segments.append(segment)
    doc.regions.append((a, b))
    doc.lines.append(n_lines)
    return len(doc.segments) - 1


# --------------------------------------------------------------------------------------- Markdown
_LINK = re.compile(r"(?<!!)" + MARKDOWN_LINK)  # not an image's


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer(r"\n", text):
        starts.append(m.end())
    starts.append(len(text) + 1)
    return starts


def _parse_markdown(text: str, name: str) -> Document:
    from markdown_it import MarkdownIt

    doc = Document(text, "md", newline="\r\n" if "\r\n" in text else "\n")
    starts = _line_starts(text)
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    in_table = 0
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            in_table += 1
        elif token.type == "table_close":
            in_table -= 1
        if token.type != "inline" or in_table or not token.map or not token.content.strip():
            continue
        if i == 0 or tokens[i - 1].type not in ("paragraph_open", "heading_open"):
            continue
        content_lines = token.content.split("\n")
        first, last = token.map[0], token.map[0] + len(content_lines) - 1
        line_a = text[starts[first] : starts[first + 1] - 1]
        line_b = text[starts[last] : starts[last + 1] - 1]
        off_a, off_b = line_a.find(content_lines[0]), line_b.rfind(content_lines[-1])
        if off_a < 0 or off_b < 0:  # not where the parser says (an escape it rewrote): leave it
            continue
        a, b = starts[first] + off_a, starts[last] + off_b + len(content_lines[-1])
        segment = " ".join(line.strip() for line in content_lines)
        holder = _add(doc, segment, a, b, 1)
        for link in _LINK.finditer(segment):
            inner = link.group()[1 : _link_text_end(link.group())]
            if inner.strip() and not read_in_sentence(link.group()):  # else the pipeline reads it in its sentence
                doc.links.append((holder, link.group(), _add(doc, inner, -1, -1, 1)))
    return doc


# ------------------------------------------------------------------------------------- plain text
def _parse_text(text: str, name: str) -> Document:
    doc = Document(text, "text", newline="\r\n" if "\r\n" in text else "\n")
    for block in re.finditer(r"(?:^[^\S\n]*\S.*(?:\n|$))+", text, re.MULTILINE):
        body = block.group()
        a = block.start() + len(body) - len(body.lstrip())
        b = block.start() + len(body.rstrip())
        _add(doc, " ".join(line.strip() for line in text[a:b].splitlines() if line.strip()), a, b, 1)
    return doc


# --------------------------------------------------------------------------------- lines and HTML
def parse_lines(text: str) -> Document:
    """Each line of `text` a segment; line breaks, blank lines and the blanks around a line are kept."""
    doc = Document(text, "lines")
    start = 0
    for line in text.splitlines(keepends=True):
        content = line.splitlines()[0] if line.strip() else ""
        if content.strip():
            a = start + len(content) - len(content.lstrip())
            _add(doc, content.strip(), a, a + len(content.strip()), 1)
        start += len(line)
    return doc


# Tags that stay inside a sentence (copied by core.text.protect); any other tag ends a segment.
INLINE_TAGS = frozenset(
    "a abbr b bdi bdo big cite code data del dfn em font i img ins kbd mark q s samp small span strong sub sup "
    "time tt u var wbr".split()
)
_TAG = r"</?([A-Za-z][\w:-]*)[^<>]*>"
# Comments, doctype, the elements whose text is not prose (kept whole), and any tag (group 3: its name).
_HTML_PARTS = re.compile(
    rf"<!--.*?-->|<![^<>]*>|<\?[^<>]*>|<(script|style|pre|textarea)\b.*?</\1\s*>|({_TAG})", re.S | re.I
)
_HTML_TAG = re.compile(_TAG)
_HTML_BLANK = r"(?:\s|&nbsp;|&#0*160;|&#x0*a0;)*"
_HTML_EDGES = (re.compile(_HTML_BLANK, re.I), re.compile(_HTML_BLANK + r"\Z", re.I))


def parse_html(text: str) -> Document:
    """The runs of text and inline tags between block-level tags, as segments (the module's docstring)."""
    doc = Document(text, "html")
    run = 0  # where the current run began
    for m in _HTML_PARTS.finditer(text):
        if m.group(3) and m.group(3).lower() in INLINE_TAGS:
            continue
        _html_run(doc, run, m.start())
        run = m.end()
    _html_run(doc, run, len(text))
    return doc


def _html_run(doc: Document, a: int, b: int) -> None:
    """text[a:b] as one segment: its blank edges, and inline elements wrapping all of it, left out;
    entities decoded, whitespace folded to single spaces. A run with no letter stays as it is."""
    text = doc.text
    while True:
        a = _HTML_EDGES[0].match(text, a, b).end()
        b = _HTML_EDGES[1].search(text, a, b).start()
        inside = _wrapped(text, a, b)
        if inside is None:
            break
        a, b = inside
    pieces, tags, prose, pos = [], set(), False, a
    for m in _HTML_TAG.finditer(text, a, b):
        words = html.unescape(text[pos : m.start()])
        prose = prose or any(c.isalpha() for c in words)
        tag = " ".join(m.group().split())
        pieces += [words, tag]
        tags.add(tag)
        pos = m.end()
    words = html.unescape(text[pos:b])
    if not (prose or any(c.isalpha() for c in words)):
        return
    _add(doc, " ".join("".join([*pieces, words]).split()), a, b, 1)
    doc.markup.append(frozenset(tags))


def _wrapped(text: str, a: int, b: int) -> tuple[int, int] | None:
    """The inside of the one element that holds every letter of text[a:b] (`<i>…</i>`, `| <b>…</b>`),
    else None."""
    first = _HTML_TAG.search(text, a, b)
    if (
        first is None
        or first.group().startswith("</")
        or first.group().endswith("/>")
        or _letters(text[a : first.start()])
    ):
        return None
    name = re.escape(first.group(1))
    close = re.compile(rf"</{name}\s*>(?=[^<>]*\Z)", re.I).search(text, first.end(), b)
    if close is None or _letters(text[close.end() : b]):
        return None
    depth = 1
    for m in re.compile(rf"<(/?){name}\b[^<>]*>", re.I).finditer(text, first.end(), close.start()):
        depth += -1 if m.group(1) else 1
        if depth == 0:  # <b>x</b> y <b>z</b>: closed before the end
            return None
    return first.end(), close.start()


def _letters(html_text: str) -> bool:
    return any(c.isalpha() for c in html.unescape(html_text))


def _escape_html(translation: str, tags: frozenset[str]) -> str:
    """The translation as HTML: the source's own tags as they are, everything else escaped."""
    out, pos = [], 0
    for m in _HTML_TAG.finditer(translation):
        if m.group() in tags:
            out += [html.escape(translation[pos : m.start()], quote=False), m.group()]
            pos = m.end()
    out.append(html.escape(translation[pos:], quote=False))
    return "".join(out)


_PARSERS = {"srt": _parse_srt, "md": _parse_markdown, "text": _parse_text}


def document_format(path: str | Path | None, override: str | None = None) -> str:
    """The format named by `override`, else by the file's extension (plain text when unknown)."""
    if override is not None:
        if override not in FORMATS:
            raise DocumentError(f"unknown document format {override!r}; one of {', '.join(FORMATS)}")
        return override
    return _EXTENSIONS.get(Path(path).suffix.lower(), "text") if path is not None else "text"


def parse_document(text: str, fmt: str, name: str = "<document>") -> Document:
    """The segments of `text` read as `fmt`; a bad file raises DocumentError naming name:line."""
    if fmt not in _PARSERS:
        raise DocumentError(f"unknown document format {fmt!r}; one of {', '.join(FORMATS)}")
    return _PARSERS[fmt](text, name)


def read_utf8(path: str | Path, what: str = "file") -> str:
    """The text of the UTF-8 file `path`; a missing file or a bad byte raises DocumentError (path:line)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = raw[: exc.start].count(b"\n") + 1
        raise DocumentError(f"{path}:{lineno}: invalid UTF-8 (byte 0x{raw[exc.start]:02x})") from None


def read_document(path: str | Path, fmt: str | None = None) -> Document:
    """The document in the UTF-8 file `path`, its format from `fmt` or the extension."""
    return parse_document(read_utf8(path, "document"), document_format(path, fmt), str(path))
