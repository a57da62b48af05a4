"""A text as LibreTranslate receives it (plain, or HTML) cut into the sentences the model translates,
and put back together around their translations.

The model translates one line at a time. Plain text: each line is a sentence (blank lines and the
whitespace around a line stay as they were). HTML: each run of text between tags is a sentence (with
entities decoded and whitespace collapsed, then escaped again); tags, comments, and the insides of
<script> and <style> are kept byte for byte, and a run with no letter in it (a separator, a number)
is kept as it is.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

# Kept verbatim: comments, whole script/style elements (their text is code), any other tag.
_MARKUP = re.compile(r"(<!--.*?-->|<script\b.*?</script\s*>|<style\b.*?</style\s*>|<[^>]*>)", re.S | re.I)
# The blank edges of a line or a text run, kept around its translation; in HTML a no-break space may be an entity.
_PLAIN_EDGES = (re.compile(r"\s*"), re.compile(r"\s*\Z"))
_BLANK = r"(?:\s|&nbsp;|&#0*160;|&#x0*a0;)*"
_HTML_EDGES = (re.compile(_BLANK, re.I), re.compile(_BLANK + r"\Z", re.I))


@dataclass(frozen=True)
class Document:
    parts: list[str | int]  # text kept as it is, or the index of a sentence in `sentences`
    sentences: list[str]
    html: bool

    def render(self, translations: list[list[str]], k: int = 0) -> str:
        """The document with sentence i replaced by translations[i][k] (its best, [0], where it has fewer)."""
        out = []
        for part in self.parts:
            if isinstance(part, int):
                options = translations[part]
                text = options[min(k, len(options) - 1)]
                out.append(html.escape(text, quote=False) if self.html else text)
            else:
                out.append(part)
        return "".join(out)


def plain(text: str) -> Document:
    parts: list[str | int] = []
    sentences: list[str] = []
    for line in text.splitlines(keepends=True):
        _around(line, line.strip(), parts, sentences, _PLAIN_EDGES)
    return Document(parts, sentences, html=False)


def markup(text: str) -> Document:
    parts: list[str | int] = []
    sentences: list[str] = []
    for i, piece in enumerate(_MARKUP.split(text)):
        if i % 2:  # re.split puts the captured markup at odd positions
            parts.append(piece)
            continue
        words = " ".join(html.unescape(piece).split())
        _around(piece, words if any(c.isalpha() for c in words) else "", parts, sentences, _HTML_EDGES)
    return Document(parts, sentences, html=True)


def _around(original: str, sentence: str, parts: list[str | int], sentences: list[str], edges) -> None:
    """`original` as a sentence slot between its own blank edges; as it is if `sentence` is ""."""
    if not sentence:
        if original:
            parts.append(original)
        return
    lead = edges[0].match(original).end()
    trail = edges[1].search(original, lead).start()
    if lead:
        parts.append(original[:lead])
    parts.append(len(sentences))
    sentences.append(sentence)
    if original[trail:]:
        parts.append(original[trail:])
