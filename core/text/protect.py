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
from core.text.case import NATURAL, case_shape
from core.text.glossary import plural

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
    TextOptions,
)
from core.text.spans import ELEMENT_TEXT, Span, find_spans, unknown_characters  # noqa: F401 - callers import them here


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
    placed: list[Span] = field(default_factory=list)  # lost by the model, put back where the alignment says
    unshouted: list[str] = field(default_factory=list)  # source words in capitals no output word translates
    strays: list[str] = field(default_factory=list)  # the model's placeholders standing for no span, taken out

    @property
    def warnings(self) -> list[str]:
        out = [
            f"the glossary term {s.original!r} → {s.output!r} could not be placed"
            if s.kind == "term" and s.copied
            else f"the model dropped {s.kind} {s.original!r}; it is missing from the translation"
            for s in self.lost
        ]
        out += [f"the model repeated {s.kind} {s.original!r}; kept once" for s in self.repeated]
        out += [
            f"no word of the translation is {w!r} (written in capitals) as the model translates it alone: "
            "its emphasis, or the word, may be missing"
            for w in self.unshouted
        ]
        out += [
            f"the model wrote its placeholder {t!r} where the source has no span for it; taken out: "
            "a word may be missing there"
            for t in self.strays
        ]
        return out


# ----------------------------------------------------------------------------------------- finding

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


def spans_to_protect(sentence: str, options: TextOptions, unknown: Callable[[str], bool] | None = None) -> list[Span]:
    """The spans the pipeline protects in one sentence, as `options` ask: every kind (only glossary terms with
    protect off), each in its source language's writing (options.languages), names in a French sentence of natural
    case (a headline capitalises every word). Training with
    placeholders (core/data/placeholders.py) finds its spans here too, so the model learns the ones it is given."""
    kinds = None if options.protect else ("term",)
    source = options.languages[0]
    # Names from French only: English names hold words French translates (the United Nations: les Nations unies),
    # and the en→fr model copies a person's name as it is.
    names = options.protect and options.names and source == "fr" and case_shape(sentence) == NATURAL
    return find_spans(
        sentence,
        terms=options.terms,
        unknown=unknown if options.protect else None,
        kinds=kinds,
        names=names,
        source=source,
    )


def spaced(text: str, start: int, end: int, placeholder: str) -> str:
    """`placeholder` for text[start:end], with a space on a side where a word touches it: glued to a word
    (ligne<br/>et) it would read as part of that word."""
    glued_before = start > 0 and text[start - 1].isalnum()
    glued_after = end < len(text) and text[end].isalnum()
    return " " * glued_before + placeholder + " " * glued_after


def protect(text: str, spans: list[Span], scheme: Scheme = DEFAULT_SCHEME, terms_in_text: bool = False) -> Protected:
    """`text` with each span replaced by a placeholder of its kind that does not already occur in it.

    terms_in_text: glossary terms stay as written (constrained decoding places their English; restore
    checks that it is there).

    An emoji or other unknown word at the very start or end (closing punctuation after it allowed) is
    set aside whole (prefix, suffix) rather than given a placeholder: the model need not see it, and it
    cannot be lost."""
    head, tail_start, tail_end = _edges(text, spans)
    prefix, suffix, closing = text[:head], text[tail_start:tail_end], text[tail_end:]
    spans = [s for s in spans if s.start >= head and s.end <= tail_start]
    out, last, used = [], head, set()
    placed = []
    for span in spans:
        if not scheme.stands_in(span.kind):
            placed.append(replace(span, placeholder=span.original, copied=True))  # stays in the text
            continue
        if terms_in_text and span.kind == "term":
            placed.append(replace(span, placeholder=span.output, copied=True))  # its English must come out
            continue
        pool = [p for p in scheme.pool(span.kind) if p not in used and not _occurrences(text, p)]
        if not pool:  # more spans of a kind than placeholders: leave the rest to the model
            continue
        placeholder = pool[0]
        used.add(placeholder)
        out.append(text[last : span.start])
        out.append(spaced(text, span.start, span.end, placeholder))
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
    if span.kind == "term":  # the English, in any case (a sentence's first word), singular or plural
        forms = sorted({span.output, plural(span.output)}, key=len, reverse=True)
        return re.compile(rf"(?<![\w'’-])(?:{'|'.join(map(re.escape, forms))})(?![\w'’-])", re.IGNORECASE)
    if span.kind == "name":  # as written, or without its accents (Montréal, Montreal); a whole name
        forms = sorted({span.original, strip_accents(span.original)}, key=len, reverse=True)
        return re.compile(rf"(?<![\w'’-])(?:{'|'.join(map(re.escape, forms))})(?![\w'’-])")
    # A number as the source wrote it or the English way (1 000,5 or 1,000.5), not inside a longer one;
    # an English plural after it is fine (les années 1990 → the 1990s), and so is an abbreviation's point before it
    # (n°45 → No.45: a point after a digit, 3.45, is a longer number).
    forms = sorted({span.original, span.output}, key=len, reverse=True)
    return re.compile(rf"(?<!\w)(?<!\d[,.])(?:{'|'.join(map(re.escape, forms))})(?:(?=s(?!\w))|(?!\w|[,.]\d))")


def restore(translation: str, protected: Protected, strays: Iterable[str] = ()) -> Restored:
    """The translation with each placeholder turned back into its span's output.

    strays: the placeholders the model learned in training (its card's); one in the translation that stands for
    none of this sentence's spans (the model read "#" or a word as one) is taken out and named, never shown."""
    lost, repeated = [], []
    text, taken_out = _without_strays(translation, protected, strays)
    marks: dict[str, str] = {}
    for i, span in enumerate(protected.spans):
        mark = f"\x00{chr(0xE000 + i)}\x00"  # kept apart until every span is found, so an output cannot match another
        if span.copied:  # the first copy not yet claimed; one more in the output is the model's own
            found = _copy_pattern(span).search(text)
            if found is None:
                lost.append(span)
                continue
            # a name or a term as the model wrote it (Montreal, Bills); a number the English way
            marks[mark] = found.group() if span.kind in ("name", "term") else span.output
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
    return Restored(protected.prefix + text, lost, repeated, strays=taken_out)


def _without_strays(text: str, protected: Protected, strays: Iterable[str]) -> tuple[str, list[str]]:
    """`text` without the placeholders in `strays` that no span of `protected` holds, and which were taken out."""
    own = {s.placeholder for s in protected.spans}
    found = [t for t in strays if t not in own and t in text]
    for token in found:
        text = text.replace(token, " ")
    if found:  # the spaces it leaves: none doubled, none before punctuation or at the ends
        text = re.sub(r" +([.,;:!?…)\]»])", r"\1", re.sub(r" {2,}", " ", text)).strip()
    return text, found
