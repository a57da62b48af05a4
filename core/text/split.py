"""Sentence splitting for French (and English) that keeps the line's own spacing.

    "Je suis là. Il pleut !"  ──sentence_spans──▶  [(0, 11), (12, 22)]
    join_sentences(line, spans, ["I am here.", "It's raining!"])  ──▶  "I am here. It's raining!"

A span covers one sentence without the whitespace around it; everything between spans (and before
the first, after the last) is the line's own and is put back unchanged, so
`join_sentences(line, spans, [line[a:b] for a, b in spans]) == line` for every line.

A boundary is a cluster of . ! ? … (with any closing quotes or brackets after it, French spacing
before « ? ! » included), then whitespace, then something that starts a sentence: a capital, a
digit, an opening quote or bracket, a dialogue dash. A period does not end a sentence after a
known abbreviation (M., Mme., p. ex., etc. only before a lower-case word) or a single capital (an
initial). docs/text.md compares these rules with pysbd and sentence-splitter on a French test list.
"""

from __future__ import annotations

import re

# Abbreviations that take a period and are followed by more of the same sentence, without the final
# period; "p. ex." is matched on its last part ("ex") after "p.". Titles and company words match in any
# case (M., Mme, Dr, Inc.).
TITLE_ABBREVIATIONS = frozenset(
    """
    m mm mme mmes mlle mlles dr drs pr me mgr st ste sts stes cie
    mr mrs ms jr sr prof gen col lt sgt rev inc ltd corp tél tel
    """.split()
)
# The others only as written in lower case: capitalised they are names or words that end sentences
# ("Il s'appelle Max. Il dort.", "Art. Il…").
ABBREVIATIONS = TITLE_ABBREVIATIONS | frozenset(
    """
    éd éds av apr env cf ex p pp vol chap fig art al réf tél no nº n° coll dir trad
    bd boul ch min max sq sqq ibid op cit c.-à-d j.-c vs e.g i.e approx dept co
    janv févr avr juil sept oct nov déc
    """.split()
)
# Ends a sentence only when the next word starts with a capital (it usually closes a list).
WEAK_ABBREVIATIONS = frozenset({"etc", "cf"})

_CLOSERS = "»”’\"')]}"
_OPENERS = "«“‘\"'([{¿¡"
_DASHES = "-–—"

# Terminal punctuation (French puts a space, often a narrow no-break one, before ? ! and »), then
# closing quotes or brackets, then the whitespace that separates sentences.
_BOUNDARY = re.compile(
    r"""
    (?P<end>
        (?:\.{2,}|…|[.!?])            # . or an ellipsis or ? !
        (?:[\s\u00a0\u202f]*[!?…]+)*  # ?!, ? !, !!!, ?…
        (?:[\s\u00a0\u202f]*[»”’"')\]}])*  # « … » and closing brackets, French spacing allowed
    )
    (?P<gap>\s+)
    """,
    re.VERBOSE,
)
_WORD_BEFORE = re.compile(r"([\w.\-'’]+)\.$")


def _starts_sentence(text: str) -> bool:
    """Does `text` (what follows a boundary's whitespace) begin like a sentence?"""
    if not text:
        return False
    ch = text[0]
    return ch.isupper() or ch.isdigit() or ch in _OPENERS or ch in _DASHES or not ch.isalpha() and not ch.isspace()


def _blocked_by_abbreviation(before: str, following: str) -> bool:
    """A single period after an abbreviation or an initial does not end the sentence."""
    match = _WORD_BEFORE.search(before)
    if not match:
        return False
    word = match.group(1)
    last = word.rsplit(".", 1)[-1] if "." in word.rstrip(".") else word
    key = word.lower()
    if len(last) == 1 and last.isalpha() and last.isupper():
        return True  # an initial: J. K. Rowling, M. Dupont
    if key in WEAK_ABBREVIATIONS or last.lower() in WEAK_ABBREVIATIONS:
        return not following[:1].isupper()
    if key in TITLE_ABBREVIATIONS or last.lower() in TITLE_ABBREVIATIONS:
        return True
    return word in ABBREVIATIONS or last in ABBREVIATIONS


def sentence_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `line`, whitespace around them left out; [] for a blank line."""
    spans: list[tuple[int, int]] = []
    start = len(line) - len(line.lstrip())
    if start == len(line):
        return spans
    for match in _BOUNDARY.finditer(line):
        end, after = match.end("end"), match.end()
        if end <= start:
            continue
        following = line[after:]
        if not _starts_sentence(following) or not any(ch.isalnum() for ch in following):
            continue  # nothing of a sentence follows: a spaced closing quote (« mourir. " ») stays with its own
        punct = match.group("end")
        if punct.rstrip(_CLOSERS + " \u00a0\u202f") == "." and _blocked_by_abbreviation(line[start:end], following):
            continue
        spans.append((start, end))
        start = after
    stop = len(line.rstrip())
    if start < stop:
        spans.append((start, stop))
    return spans


def split_sentences(line: str) -> list[str]:
    """The sentences of `line`, without the whitespace around them."""
    return [line[a:b] for a, b in sentence_spans(line)]


def join_sentences(line: str, spans: list[tuple[int, int]], sentences: list[str]) -> str:
    """`line` with the text of each span replaced by the sentence given for it; the spacing between
    (and around) them is the line's own."""
    if len(spans) != len(sentences):
        raise ValueError(f"{len(spans)} spans but {len(sentences)} sentences")
    out, last = [], 0
    for (a, b), sentence in zip(spans, sentences):
        out.append(line[last:a])
        out.append(sentence)
        last = b
    out.append(line[last:])
    return "".join(out)


# A sentence longer than this many characters goes to the model in parts: beyond it the models here
# (trained on pairs of up to 128 pieces, about 500 characters) drop or repeat clauses, and past
# max_len the decoder cuts the input.
MAX_SENTENCE_CHARS = 300
# Where a long sentence may be cut, best first: after ; or :, after a comma, before a conjunction.
_CLAUSE_BREAKS = (
    re.compile(r"[;:](?=\s)"),
    re.compile(r"[,)—–](?=\s)"),
    re.compile(r"(?=\s(?:et|mais|ou|donc|car|qui|que|où|dont|puis|alors|parce|lorsque|quand|si)\s)"),
    re.compile(r"(?=\s)"),
)


def clause_spans(line: str, a: int, b: int, limit: int = MAX_SENTENCE_CHARS) -> list[tuple[int, int]]:
    """`line[a:b]` cut into parts of at most `limit` characters, at the best clause boundary of each
    window (a semicolon, then a comma, then a conjunction, then any space; a word longer than `limit`
    is cut where it must), whitespace around parts left out. Nothing of the text is dropped."""
    parts: list[tuple[int, int]] = []
    while b - a > limit:
        window = line[a : a + limit + 1]
        cut = None
        for pattern in _CLAUSE_BREAKS:
            ends = [m.end() for m in pattern.finditer(window) if limit // 3 <= m.end() <= limit]
            if ends:
                cut = ends[-1]
                break
        cut = cut or limit
        end = a + len(line[a : a + cut].rstrip())
        parts.append((a, end))
        a = a + cut
        a += len(line[a:b]) - len(line[a:b].lstrip())
    if a < b:
        parts.append((a, b))
    return parts
