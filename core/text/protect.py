"""Things the model should copy, not translate: found, replaced by placeholders, put back.

    "Voir https://exemple.fr 🙂"  ──protect──▶  "Voir Kyoto Osaka"   (spans: the URL, the emoji)
    model: "See Kyoto Osaka"      ──restore──▶  "See https://exemple.fr 🙂"

What is protected (earlier kinds win where they overlap): glossary terms, inline code, Markdown links
(core.text.documents translates their text on its own), inline elements such as `<b>Envoyer</b>`
(the pipeline translates their text on its own and puts it back between the tags), other markup,
URLs, e-mail addresses, dates in digits, times (14 h 35, 14h35, 14:35), numbers of two or more
digits (a single digit is left to the model, which writes "three" for 3 as a translator would), and
any word holding a character outside the model's vocabulary (emoji, other scripts).

A placeholder is a word the shipped model copies unchanged: measured in docs/text.md, where single
pieces it saw often in training (city names that are the same in both languages, numbers for
numeric spans) beat bracketed tokens such as ⟨1⟩, which it has never seen and translates into
noise. Restoring never loses a span silently: one the model dropped is reported in `lost`, one it
repeated is put back once and reported in `repeated`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# The placeholder schemes live with the pipeline's options (plain data, no patterns to compile).
from core.text.options import (  # noqa: F401 - imported from here by callers
    DEFAULT_SCHEME,
    FALLBACK_SCHEMES,
    NAME_POOL,
    NUMBER_POOL,
    NUMERIC_KINDS,
    SCHEMES,
    Scheme,
)


@dataclass(frozen=True)
class Span:
    """One protected piece of the source."""

    kind: str  # term, code, link, element, markup, url, email, date, time, number, unknown
    start: int  # where it is in the text given to protect()
    end: int
    original: str  # the source text
    output: str  # what goes in the translation (the term's English, 14:35 for 14 h 35, else the original)
    placeholder: str = ""


@dataclass(frozen=True)
class Protected:
    text: str  # what the model translates
    spans: list[Span] = field(default_factory=list)
    prefix: str = ""  # set-aside source text before `text` (with its spacing), put back as it is
    suffix: str = ""  # and after it
    suffix_inside: bool = False  # the suffix goes before the translation's closing punctuation


@dataclass(frozen=True)
class Restored:
    text: str
    lost: list[Span] = field(default_factory=list)  # placeholders missing from the model's output
    repeated: list[Span] = field(default_factory=list)  # placeholders the model wrote more than once

    @property
    def warnings(self) -> list[str]:
        out = [f"the model dropped {s.kind} {s.original!r}; it is missing from the translation" for s in self.lost]
        out += [f"the model repeated {s.kind} {s.original!r}; kept once" for s in self.repeated]
        return out


# ----------------------------------------------------------------------------------------- finding
_SP = r"[ \u00a0\u202f]"  # French writes 1 000 and 14 h 35 with plain or no-break spaces
_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("code", re.compile(r"`[^`\n]+`")),
    ("link", re.compile(r"!?\[[^\[\]\n]*\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"]*\")?\)")),  # Markdown
    # An inline element whose text holds no further markup: one span, so its closing tag cannot be
    # lost on its own; the pipeline translates the text between the tags (ELEMENT_TEXT).
    ("element", re.compile(r"<([A-Za-z][\w:-]*)(?:\s+[^<>]*)?>[^<>\n]*</\1\s*>")),
    ("markup", re.compile(r"</?[A-Za-z][\w:-]*(?:\s+[^<>]*)?/?>|\{\{[^{}]*\}\}|\{\w*\}|%[sd]")),
    ("url", re.compile(r"(?:https?://|ftp://|www\.)[^\s<>«»\"]+[^\s<>«»\".,;:!?)\]'’]")),
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")),
    ("date", re.compile(r"(?<![\d/.-])(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})(?![\d/.-]*\d)")),
    ("time", re.compile(rf"(?<![\d,.])(?:[01]?\d|2[0-3])(?:{_SP}?h{_SP}?[0-5]\d|:[0-5]\d)(?!\d)")),
    (
        "number",
        re.compile(rf"(?<![\w,.])(?:\d{{1,3}}(?:{_SP}\d{{3}})+|\d{{2,}}|\d(?=[,.]\d))(?:[,.]\d+)?(?![\w]|[,.]\d)"),
    ),
]
_WORD = re.compile(r"\S+")
_EDGE_PUNCT = ".,;:!?()[]«»\"'’“”"


def _unknown_words(text: str, unknown: Callable[[str], bool]) -> Iterable[tuple[int, int]]:
    """Words holding a character outside the vocabulary, edge punctuation left out."""
    for m in _WORD.finditer(text):
        word, start = m.group(), m.start()
        stripped = word.strip(_EDGE_PUNCT)
        if not stripped or not any(unknown(ch) for ch in stripped):
            continue
        a = start + word.index(stripped)
        yield a, a + len(stripped)


ELEMENT_TEXT = re.compile(r"^(<[^<>]+>)(.*)(</[^<>]+>)$", re.DOTALL)  # an element's tags and its text


def _render(kind: str, text: str) -> str:
    """How a span is written in English: 14 h 35 → 14:35, 1 000,5 → 1,000.5; other kinds unchanged."""
    if kind == "time":
        hours, minutes = re.split(rf"{_SP}?h{_SP}?|:", text)
        return f"{int(hours)}:{minutes}"
    if kind == "number":
        whole, _, decimals = re.sub(r",(\d+)$", r".\1", text).partition(".")
        whole = re.sub(_SP, ",", whole)
        return whole + ("." + decimals if decimals else "")
    return text


def find_spans(
    text: str,
    *,
    terms: Iterable[tuple[str, str]] = (),
    unknown: Callable[[str], bool] | None = None,
    kinds: Iterable[str] | None = None,
) -> list[Span]:
    """Non-overlapping spans to protect in `text`, in order.

    terms: (French, English) glossary pairs, matched whole-word and case-insensitively, longest first.
    unknown: says whether a character is outside the model's vocabulary (see `unknown_characters`).
    kinds: only these kinds (None = all).
    """
    wanted = None if kinds is None else set(kinds)
    found: list[Span] = []
    taken = [False] * len(text)

    def add(kind: str, a: int, b: int, output: str | None = None) -> None:
        if a >= b or any(taken[a:b]) or wanted is not None and kind not in wanted:
            return
        for i in range(a, b):
            taken[i] = True
        original = text[a:b]
        found.append(Span(kind, a, b, original, _render(kind, original) if output is None else output))

    for fr, en in sorted(terms, key=lambda t: -len(t[0])):
        for m in re.finditer(rf"(?<!\w){re.escape(fr)}(?!\w)", text, re.IGNORECASE):
            add("term", m.start(), m.end(), en)
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            add(kind, m.start(), m.end())
    if unknown is not None:
        for a, b in _unknown_words(text, unknown):
            add("unknown", a, b)
    return sorted(found, key=lambda s: s.start)


def unknown_characters(tokenizer) -> Callable[[str], bool]:
    """A test for characters the tokenizer can only write as <unk> (cached per character)."""
    from core.model.config import UNK_ID

    cache: dict[str, bool] = {}

    def unknown(ch: str) -> bool:
        if ch not in cache:
            cache[ch] = not ch.isspace() and UNK_ID in tokenizer.encode(ch)
        return cache[ch]

    return unknown


# ----------------------------------------------------------------------------- protect and restore
# Kinds that may stand at a sentence's edge outside the text the model sees (an emoji closing a line).
EDGE_KINDS = frozenset({"unknown"})


_TRAILING = " \u00a0\u202f.,;:!?…»”\"')]"


def _edges(text: str, spans: list[Span]) -> tuple[int, int, int]:
    """(head, tail_start, tail_end): text[:head] and text[tail_start:tail_end] are edge spans
    (EDGE_KINDS with nothing but spaces between them and the edge, or closing punctuation after
    the last one) set aside; the model sees text[head:tail_start] + text[tail_end:]."""
    head, tail, tail_end = 0, len(text), None
    for span in spans:
        if span.kind in EDGE_KINDS and not text[head : span.start].strip():
            head = span.end
    for span in reversed(spans):
        gap = text[span.end : tail]
        if span.kind not in EDGE_KINDS or span.start < head:
            break
        if gap.strip() and (tail_end is not None or gap.strip(_TRAILING)):
            break
        tail_end = span.end if tail_end is None else tail_end
        tail = span.start
    tail_start = len(text[:tail].rstrip())
    head = len(text) - len(text[head:].lstrip())
    if head >= tail_start:  # nothing but edge spans: hand them all to the model
        return 0, len(text), len(text)
    return head, tail_start, len(text) if tail_end is None else tail_end


def protect(text: str, spans: list[Span], scheme: Scheme = DEFAULT_SCHEME) -> Protected:
    """`text` with each span replaced by a placeholder of its kind that does not already occur in it.

    An emoji or other unknown word at the very start or end (closing punctuation after it allowed) is
    set aside whole (prefix, suffix) rather than given a placeholder: the model need not see it, and it
    cannot be lost."""
    head, tail_start, tail_end = _edges(text, spans)
    prefix, suffix, closing = text[:head], text[tail_start:tail_end], text[tail_end:]
    spans = [s for s in spans if s.start >= head and s.end <= tail_start]
    out, last, used = [], head, set()
    placed = []
    for span in spans:
        pool = [p for p in scheme.pool(span.kind) if p not in used and not _occurrences(text, p)]
        if not pool:  # more spans of a kind than placeholders: leave the rest to the model
            continue
        placeholder = pool[0]
        used.add(placeholder)
        out.append(text[last : span.start])
        out.append(placeholder)
        last = span.end
        placed.append(Span(span.kind, span.start, span.end, span.original, span.output, placeholder))
    out.append(text[last:tail_start])
    if suffix:
        out.append(closing)
    return Protected("".join(out), placed, prefix, suffix, bool(suffix and closing.strip()))


def _pattern(placeholder: str) -> re.Pattern:
    # Whole tokens only: 99 must not match inside 1999, Kyoto not inside Kyotoite.
    return re.compile(rf"(?<![\w#⟨]){re.escape(placeholder)}(?![\w⟩])")


def _occurrences(text: str, placeholder: str) -> list[re.Match]:
    return list(_pattern(placeholder).finditer(text))


def restore(translation: str, protected: Protected) -> Restored:
    """The translation with each placeholder turned back into its span's output."""
    lost, repeated = [], []
    text = translation
    marks: dict[str, str] = {}
    for i, span in enumerate(protected.spans):
        hits = _occurrences(text, span.placeholder)
        if not hits:
            lost.append(span)
            continue
        if len(hits) > 1:
            repeated.append(span)
        mark = f"\x00{i}\x00"  # kept apart until every placeholder is found, so an output cannot match another
        marks[mark] = span.output
        first = hits[0]
        rest = _pattern(span.placeholder).sub("", text[first.end() :])
        text = text[: first.start()] + mark + rest
    for mark, output in marks.items():
        text = text.replace(mark, output)
    if repeated:
        text = re.sub(r" {2,}", " ", text).replace(" .", ".").strip()
    if protected.suffix_inside:
        body = text.rstrip(_TRAILING)
        text = body + protected.suffix + text[len(body) :]
    else:
        text += protected.suffix
    return Restored(protected.prefix + text, lost, repeated)
