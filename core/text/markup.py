"""Markdown and HTML markup the model never sees: kept byte for byte, projected onto the translation.

    "- **Attention :** ne supprimez pas le dossier."
      line_regions ──▶ "- " kept; "**Attention :** ne supprimez pas le dossier." to translate
      strip_inline ──▶ "Attention : ne supprimez pas le dossier." + a mark: ** around words 0..1
      model ──▶ "Warning: do not delete the folder."      aligner ──▶ Warning ← Attention, …
      project ──▶ "**Warning:** do not delete the folder."

Block markup (a heading's #, a list's marker, a quote's >, a table's pipes) is outside every region
the pipeline translates, so it cannot change. Inline emphasis (**, *, __, _, ~~) is taken out of the
sentence and put back around the output words aligned to the words it wrapped, as Firefox's
translations project tags (the model reads the sentence as it learned sentences: without markers).
So do a link's brackets and target and an inline element's tags where their text is plain words
(`Lisez le [guide](u).` → `Read the [guide](u).`: the words are translated in their sentence, where alone
"guide" came out "a guide" inside "Read on the …"); inline code, and links and elements holding digits or
further markup, are protected spans (core.text.spans) whose text is translated on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.text.spans import ELEMENT_TEXT

# A heading, a list item (-, *, +, 1., 1)), a quote, or several of them (> - ), with their spacing.
_BLOCK = re.compile(r"^[ \t]*(?:(?:#{1,6}|[-*+]|\d{1,3}[.)]|>|\[[ xX]\])[ \t]+)+")  # - [ ] a task too
_TABLE_RULE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*(?::?-{3,}:?[ \t]*)?$")
_PUNCT = ".,;:!?…"
_HEADING_CLOSE = re.compile(r"[ \t]+#+[ \t]*$")  # ## Titre ##
# Emphasis: the marker, text that neither starts nor ends with a space, the same marker.
_EMPHASIS = re.compile(
    r"(?<![\w*~\\])(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1(?![\w*~])"
    r"|(?<![\w*\\])(\*)(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w\\])(_)(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)"
)


# The text of a link or element the model reads in its sentence: plain words (letters, spaces, apostrophes, hyphens,
# a closing punctuation mark), no digits or further markup.
_PLAIN_WORDS = re.compile(r"[^\W\d_]+(?:[ '’-][^\W\d_]+)*[.!?…,;:]?")


def read_in_sentence(wrapper: str) -> bool:
    """Whether a Markdown link or inline element (`[le guide](u)`, `<i>ici</i>`) is read by the model inside its
    sentence, its markup taken out and projected back (strip_inline, project): its text is plain words from a
    lower-case one. The rest are spans whose text is translated alone — digits, further markup, an image's alt
    text, and a capitalised label, which inside a sentence is copied as a name ("Cliquez sur <b>Envoyer</b>
    maintenant." → "Click on Envoyer now.")."""
    m = ELEMENT_TEXT.match(wrapper)
    return (
        m is not None
        and m.group(1) != "!["
        and m.group(2)[:1].islower()
        and _PLAIN_WORDS.fullmatch(m.group(2)) is not None
    )


def line_regions(line: str) -> list[tuple[int, int]]:
    """(start, end) of the parts of `line` that hold text to translate; the rest (a heading's #, a list
    marker, a table's pipes and rules) is markup, copied as it is."""
    if _TABLE_RULE.match(line):
        return []
    if line.strip().startswith("|") and line.strip().endswith("|") and line.count("|") >= 2:
        pipes = [m.start() for m in re.finditer(r"(?<!\\)\|", line)]
        cells = []
        for a, b in zip(pipes, pipes[1:]):
            cell = line[a + 1 : b]
            if cell.strip():
                cells.append((a + 1 + len(cell) - len(cell.lstrip()), a + 1 + len(cell.rstrip())))
        return cells
    block = _BLOCK.match(line)
    start = block.end() if block else 0
    end = len(line)
    if block and block.group().lstrip().startswith("#"):
        close = _HEADING_CLOSE.search(line, start)
        end = close.start() if close else end
    if not line[start:end].strip():
        return []
    return [(start, end)]


@dataclass(frozen=True)
class Mark:
    """Inline markup around words of a sentence: `open` before word `first`, `close` after word `last`."""

    open: str
    close: str
    first: int  # word index (whitespace-separated words) in the sentence without its markers
    last: int
    punct_inside: bool = False  # the marked text ends with punctuation (**Attention :**): so does the output's


def strip_inline(text: str, wrapped: Sequence[str] = ()) -> tuple[str, list[Mark]]:
    """`text` without its emphasis markers, and where they were (word indices of the text returned).

    wrapped: links and inline elements of `text` (`[la page](u)`, `<b>Envoyer</b>`) whose text the model
    reads inside its sentence; their brackets and target, or tags, become marks too."""
    first, outer = _strip(text, _wrapped(text, wrapped))
    plain, marks = _strip(first, _emphasis(first))
    # Emphasis markers hold no space, so taking them out leaves the words, and the outer marks' indices, as they were.
    # Emphasis can hold a wrapped link, never the other way: its marks go first, to open before and close after.
    return plain, marks + outer


def _wrapped(text: str, wrapped: Sequence[str]) -> list[tuple[int, int, str, str, str]]:
    """(start, end, open, text, close) of each of `wrapped` in `text`, in order."""
    found, at = [], 0
    for original in wrapped:
        m = ELEMENT_TEXT.match(original)
        start = text.find(original, at)
        if m is None or start < 0:
            continue
        found.append((start, start + len(original), m.group(1), m.group(2), m.group(3)))
        at = start + len(original)
    return found


def _emphasis(text: str) -> list[tuple[int, int, str, str, str]]:
    """(start, end, marker, text, marker) of each emphasis of `text` with no emphasis inside."""
    found = []
    for m in _EMPHASIS.finditer(text):
        marker = m.group(1) or m.group(3) or m.group(5)
        inner = m.group(2) or m.group(4) or m.group(6)
        if inner.strip() and not _EMPHASIS.search(inner):
            found.append((m.start(), m.end(), marker, inner, marker))
    return found


def _strip(text: str, found: Sequence[tuple[int, int, str, str, str]]) -> tuple[str, list[Mark]]:
    """`text` with each found markup replaced by its text, and a mark for each (word indices of the text returned)."""
    out, last, removed = [], 0, []
    for start, end, opening, inner, closing in found:
        out.append(text[last:start])
        at = sum(map(len, out))
        out.append(inner)
        removed.append((opening, closing, at, at + len(inner), inner.rstrip()[-1] in _PUNCT))
        last = end
    out.append(text[last:])
    plain = "".join(out)
    marks = []
    for opening, closing, a, b, punct in removed:
        first = len(plain[:a].split()) if plain[:a].strip() else 0
        first -= 1 if a and not plain[a - 1].isspace() and plain[:a].strip() else 0
        last_word = len(plain[:b].split()) - 1
        marks.append(Mark(opening, closing, max(first, 0), max(last_word, first), punct))
    return plain, marks


def project(output: str, marks: Sequence[Mark], links: Sequence[tuple[int, int]] | None, n_source: int) -> str:
    """`output` (the model's words) with each mark put around the output words aligned to its source
    words (links: (source word, output word) pairs), or, without links, around the same share of it."""
    words = output.split(" ")
    n_out = len(words)
    if not marks or not output.strip():
        return output
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    for mark in marks:
        targets = sorted({t for s, t in links or () if mark.first <= s <= mark.last and t < n_out})
        if targets:  # the run of adjacent aligned words closest in length to the marked words (first on a tie)
            runs: list[list[int]] = []
            for t in targets:
                if runs and t == runs[-1][-1] + 1:
                    runs[-1].append(t)
                else:
                    runs.append([t])
            best = min(runs, key=lambda run: abs(len(run) - (mark.last - mark.first + 1)))
            a, b = best[0], best[-1]
        else:  # where the words were, proportionally
            a = min(n_out - 1, round(mark.first * n_out / max(n_source, 1)))
            b = max(a, min(n_out - 1, round((mark.last + 1) * n_out / max(n_source, 1)) - 1))
        if mark.first == 0:
            a = 0
        if mark.last >= n_source - 1:
            b = n_out - 1
        opens.setdefault(a, []).append(mark.open)
        closes.setdefault(b, []).insert(0, (mark.close, mark.punct_inside))
    out = []
    for i, word in enumerate(words):
        if i in opens:
            word = "".join(opens[i]) + word
        for close, punct_inside in closes.get(i, ()):
            body = word if punct_inside else word.rstrip(_PUNCT)
            word = body + close + word[len(body) :]
        out.append(word)
    return " ".join(out)


def markup_tokens(text: str) -> list[str]:
    """The markup of a line in order (block markers, emphasis markers, inline code, link targets, tags):
    what must come out byte for byte. Used to check a translation against its source."""
    tokens = []
    block = _BLOCK.match(text)
    if block:
        tokens.append(block.group())
    tokens += re.findall(
        r"`[^`]+`|\]\([^)]*\)|</?[A-Za-z][^<>]*>|\*\*|__|~~|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])", text
    )
    tokens += ["|"] * text.count("|")
    return tokens
