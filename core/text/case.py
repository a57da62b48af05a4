"""Casing: ALL-CAPS and Title-Cased input, translated through their natural case.

The model learned from sentence-cased text; in capitals a French line splits into pieces it rarely
saw and comes out as noise. So the text is brought to sentence case, translated, and the output given
the input's shape back: `case_shape` finds the shape, `natural_case` lowers it, `apply_case` puts it on
the translation. Words listed in `keep` (the placeholders of protected spans) are left as they are.
Lowering PARIS loses that it is a name, and the model translates "paris" (bets) where it knew "Paris": a
`proper` predicate (the model's vocabulary: `names_by_pieces`) gives such words their capital back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

UPPER, TITLE, NATURAL = "upper", "title", "natural"

# Short words a French or English headline leaves in lower case.
_FR_SMALL = frozenset("à au aux de des du d en et l la le les ou par pour sur un une dans avec sans".split())
_EN_SMALL = frozenset("a an and as at but by for from in into nor of on or over the to up with".split())
_WORDS = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


@lru_cache(maxsize=64)
def _words_and(keep: frozenset[str]) -> re.Pattern[str]:
    """The word pattern, with each placeholder of `keep` that is not a word itself (<ph0>, ⟨11⟩) one unit, so its
    letters are neither a word of the shape nor cased (<ph0> must not become <PH0>)."""
    units = sorted((k for k in keep if not _WORDS.fullmatch(k)), key=len, reverse=True)
    return re.compile("|".join([*map(re.escape, units), _WORDS.pattern])) if units else _WORDS


def case_shape(text: str, keep: frozenset[str] = frozenset()) -> str:
    """UPPER when every letter is a capital (four letters at least: PRIX, not OK), TITLE when every longer word of
    three or more starts with one, else NATURAL."""
    words = [w for w in _words_and(keep).findall(text) if w not in keep]
    if words and sum(len(w) for w in words) >= 4 and all(w.isupper() for w in words):
        return UPPER
    content = [w for w in words if w.lower() not in _FR_SMALL | _EN_SMALL and len(w) > 1]
    if len(words) >= 3 and len(content) >= 2 and all(w[0].isupper() for w in content):
        if any(not w.isupper() for w in content):  # an acronym-only line is UPPER's business
            return TITLE
    return NATURAL


def _map_words(text: str, keep: frozenset[str], fn) -> str:
    out, last = [], 0
    for i, m in enumerate(_words_and(keep).finditer(text)):
        out.append(text[last : m.start()])
        word = m.group()
        out.append(word if word in keep else fn(i, word))
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def natural_case(text: str, keep: frozenset[str] = frozenset(), proper: Callable[[str], bool] | None = None) -> str:
    """`text` in sentence case: all lower, the first word capitalised, and each word `proper` says is a name
    (PARIS → Paris, L'EUROPE → l'Europe; `proper` gets the lowered word, after an elision's apostrophe)."""

    def lower(i: int, word: str) -> str:
        head, mark, last = word.lower().rpartition("'") if "'" in word else word.lower().rpartition("’")
        if proper is not None and last and proper(last):
            last = last[0].upper() + last[1:]
        return head + mark + last

    lowered = _map_words(text, keep, lower)
    first = next(_words_and(keep).finditer(lowered), None)
    if first is None or not _WORDS.fullmatch(first.group()):  # no word, or a placeholder first (<ph0> est fermé)
        return lowered
    i = first.start()
    return lowered[:i] + lowered[i].upper() + lowered[i + 1 :]


def apply_case(text: str, shape: str, keep: frozenset[str] = frozenset()) -> str:
    """The translation `text` given the source's shape: capitals, or a headline's capitals (English
    small words stay lower except the first), or unchanged."""
    if shape == UPPER:
        return _map_words(text, keep, lambda i, w: w.upper())
    if shape == TITLE:
        return _map_words(text, keep, lambda i, w: w if i and w.lower() in _EN_SMALL else w[0].upper() + w[1:])
    return text


def names_by_pieces(count: Callable[[str], int]) -> Callable[[str], bool]:
    """A `proper` predicate from a vocabulary: a word is a name where its capitalised form is fewer pieces than
    its lower case (the vocabulary learned "▁Paris" whole and splits "par|is"; "▁président" and "▁Président"
    are one piece each, so président stays lower). `count`: the pieces a word encodes to."""

    def proper(word: str) -> bool:
        return word[:1].isalpha() and count(word[0].upper() + word[1:]) < count(word)

    return proper
