"""Things the model should copy, not translate: found, replaced by placeholders, put back.

    "Voir https://exemple.fr 🙂"  ──protect──▶  "Voir Kyoto Osaka"   (spans: the URL, the emoji)
    model: "See Kyoto Osaka"      ──restore──▶  "See https://exemple.fr 🙂"

What is protected (earlier kinds win where they overlap): glossary terms, inline code, Markdown links
(core.text.documents translates their text on its own), inline elements such as `<b>Envoyer</b>`
(the pipeline translates their text on its own and puts it back between the tags), other markup,
URLs, e-mail addresses, dates in digits, times (14 h 35, 14h35, 14:35), numbers of two or more
digits (a single digit is left to the model, which writes "three" for 3 as a translator would), and
any word holding a character outside the model's vocabulary (emoji, other scripts); when asked, names
(two or more capitalised words inside a sentence: Angela Merkel, Jean-Pierre Raffarin).

A placeholder is a word the shipped model copies unchanged: measured in docs/text.md, where single
pieces it saw often in training (city names that are the same in both languages, numbers for
numeric spans) beat bracketed tokens such as ⟨1⟩, which it has never seen and translates into
noise. Numbers and names are first left as written (the default `copy` scheme): a model that copies
them does best with the thing itself, and a sentence where one does not come out whole takes the
beam's next hypothesis that keeps it, else is translated again with placeholders (core.text.pipeline);
a name's placeholder is a person's (Tom, Mary). Restoring never loses a span silently: one the model
dropped is reported in `lost`, one it repeated is put back once and reported in `repeated`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from core.text.accents import strip_accents

# The placeholder schemes live with the pipeline's options (plain data, no patterns to compile).
from core.text.options import (  # noqa: F401 - imported from here by callers
    COPIED_KINDS,
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
    copied: bool = False  # left in the text for the model to copy (a number or name in the copy scheme)


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
# A name: two or more capitalised words in a row (Angela Merkel, Jean-Pierre Raffarin, Dr Balfour Mount).
_CAP = r"[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ]+(?:[-'’][A-ZÀ-ÖØ-Þa-zà-öø-ÿ][a-zà-öø-ÿ]*)*"
_CAP_WORD = re.compile(_CAP)
_NAME = re.compile(rf"(?<![\w'’-]){_CAP}(?:[ \u00a0]{_CAP})+(?![\w'’-])")
# Capitalised words that open a sentence or stand before a name and are translated, not copied.
_NOT_NAME = frozenset(
    """le la les l un une des du de d ce cet cette ces mon ma mes son sa ses notre nos votre vos leur leurs
    et mais ou donc or ni car en au aux à dans par pour sur sous avec sans selon depuis pendant après avant
    il elle ils elles on nous vous je tu si quand comme lorsque alors ainsi cependant toutefois pourtant enfin
    puis ensuite chez entre contre vers lundi mardi mercredi jeudi vendredi samedi dimanche monsieur madame
    mademoiselle messieurs mesdames président présidente ministre premier première docteur professeur maître
    général sénateur député juge saint sainte mme mlle mmes dre me""".split()
)
# A run that opens with one of these is an institution or a place in French word order (la Cour Suprême,
# le Centre Brennan, la Commission Charbonneau, le Grand Montréal): English reorders or translates it.
_INSTITUTION = frozenset(
    """centre cour commission laboratoire laboratoires société union banque conseil parlement parti assemblée
    université ministère agence institut fondation association fédération organisation office musée église
    hôpital palais place rue avenue boulevard pont gare lac mont île grand grande nouvelle nouveau tribunal
    maison chambre sénat gouvernement état états république royaume nations communauté conférence comité
    bureau service direction armée forces front mouvement ligue coupe championnat prix festival salon océan
    mer golfe cap baie vallée forêt région province département ville château collège lycée école académie
    compagnie groupe caisse crédit fonds marché bourse cathédrale tour jardin parc stade moyen seconde guerre
    jeux père mère nord sud haute haut petit petite""".split()
)
# A run holding one of these is a place English words otherwise (Pacifique Sud → South Pacific).
_COMPASS = frozenset("nord sud est ouest oriental orientale occidental occidentale central centrale".split())
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


def _names(text: str) -> Iterable[tuple[int, int]]:
    """Runs of two or more capitalised words that are not the sentence's first word, leading words
    that are translated rather than copied (Le, Président, Lundi) left out."""
    first = re.search(r"\w", text)
    for m in _NAME.finditer(text):
        words = list(_CAP_WORD.finditer(m.group()))
        while words and (
            m.start() + words[0].start() == (first.start() if first else -1)
            or re.split(r"[-'’]", words[0].group().lower())[0] in _NOT_NAME
        ):
            words.pop(0)
        lowered = [w.group().lower() for w in words]
        if len(words) >= 2 and lowered[0] not in _INSTITUTION and not _COMPASS.intersection(lowered):
            yield m.start() + words[0].start(), m.start() + words[-1].end()


def find_spans(
    text: str,
    *,
    terms: Iterable[tuple[str, str]] = (),
    unknown: Callable[[str], bool] | None = None,
    kinds: Iterable[str] | None = None,
    names: bool = False,
) -> list[Span]:
    """Non-overlapping spans to protect in `text`, in order.

    terms: (French, English) glossary pairs, matched whole-word and case-insensitively, longest first.
    unknown: says whether a character is outside the model's vocabulary (see `unknown_characters`).
    kinds: only these kinds (None = all).
    names: also runs of capitalised words (kind "name"); only for a sentence in its natural case (in a
    Title-Cased headline every word is capitalised).
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
    if names:
        for a, b in _names(text):
            add("name", a, b)
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
        if scheme.copies and span.kind in COPIED_KINDS:
            placed.append(replace(span, placeholder=span.original, copied=True))  # stays in the text
            continue
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


def _copy_pattern(span: Span) -> re.Pattern:
    if span.kind == "name":  # as written, or without its accents (Montréal, Montreal); a whole name
        forms = sorted({span.original, strip_accents(span.original)}, key=len, reverse=True)
        return re.compile(rf"(?<![\w'’-])(?:{'|'.join(map(re.escape, forms))})(?![\w'’-])")
    # A number as the source wrote it or the English way (1 000,5 or 1,000.5), not inside a longer one;
    # an English plural after it is fine (les années 1990 → the 1990s).
    forms = sorted({span.original, span.output}, key=len, reverse=True)
    return re.compile(rf"(?<![\w,.])(?:{'|'.join(map(re.escape, forms))})(?:(?=s(?!\w))|(?!\w|[,.]\d))")


def restore(translation: str, protected: Protected) -> Restored:
    """The translation with each placeholder turned back into its span's output."""
    lost, repeated = [], []
    text = translation
    marks: dict[str, str] = {}
    for i, span in enumerate(protected.spans):
        mark = f"\x00{chr(0xE000 + i)}\x00"  # kept apart until every span is found, so an output cannot match another
        if span.copied:  # the first copy not yet claimed; one more in the output is the model's own
            found = _copy_pattern(span).search(text)
            if found is None:
                lost.append(span)
                continue
            marks[mark] = found.group() if span.kind == "name" else span.output  # a name as the model wrote it
            text = text[: found.start()] + mark + text[found.end() :]
            continue
        hits = _occurrences(text, span.placeholder)
        if not hits:
            lost.append(span)
            continue
        if len(hits) > 1:
            repeated.append(span)
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
