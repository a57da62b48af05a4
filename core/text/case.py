"""Casing: ALL-CAPS and Title-Cased input, translated through their natural case.

The model learned from sentence-cased text; in capitals a French line splits into pieces it rarely
saw and comes out as noise. So the text is brought to sentence case, translated, and the output given
the input's shape back: `case_shape` finds the shape, `natural_case` lowers it, `apply_case` puts it on
the translation. Words listed in `keep` (the placeholders of protected spans) are left as they are.
Lowering PARIS loses that it is a name, and the model translates "paris" (bets) where it knew "Paris": a
`proper` predicate (the model's vocabulary: `names_by_pieces`) gives such words their capital back.

A word written loud inside a sentence in natural case ("C'est TRÈS important", "It is VERY important") is
split letter by letter too, and the model drops it or copies it: `loud_words` lowers the words a `loud`
predicate picks (`loud_by_pieces`, the model's vocabulary again) and `shout_aligned` writes the output words
aligned to them in capitals ("It's VERY important.").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
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
    """UPPER when every letter is a capital (four letters at least: PRIX, not OK), TITLE when every content word (of
    three words or more, two of them past the first) starts with one, else NATURAL."""
    words = [w for w in _words_and(keep).findall(text) if w not in keep]
    if words and sum(len(w) for w in words) >= 4 and all(w.isupper() for w in words):
        return UPPER
    content = [w for w in words if w.lower() not in _FR_SMALL | _EN_SMALL and len(w) > 1]
    # past the first word, two capitalised content words at least: a sentence's opening capital and one name
    # ("Appeler Éric à 18h") are no headline, and lowering the name lost it ("Specify 18:00.")
    later = [w for w in words[1:] if w.lower() not in _FR_SMALL | _EN_SMALL and len(w) > 1]
    if len(words) >= 3 and len(content) >= 2 and len(later) >= 2 and all(w[0].isupper() for w in content):
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

    lowered = _map_words(text, keep, lambda i, word: _lowered(word, proper))
    first = next(_words_and(keep).finditer(lowered), None)
    if first is None or not _WORDS.fullmatch(first.group()):  # no word, or a placeholder first (<ph0> est fermé)
        return lowered
    i = first.start()
    return lowered[:i] + lowered[i].upper() + lowered[i + 1 :]


def elided(word: str) -> tuple[str, str]:
    """A word as its elision and the word after the apostrophe (L'EUROPE → "L'", "EUROPE"; PARIS → "", "PARIS")."""
    head, mark, last = word.rpartition("'") if "'" in word else word.rpartition("’")
    return head + mark, last


def _lowered(word: str, proper: Callable[[str], bool] | None) -> str:
    """`word` in lower case, the word after an elision's apostrophe capitalised where `proper` says it is a name."""
    head, last = elided(word.lower())
    if proper is not None and last and proper(last):
        last = last[0].upper() + last[1:]
    return head + last


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


def loud_by_pieces(count: Callable[[str], int]) -> Callable[[str], bool]:
    """A `loud` predicate from a vocabulary: a word in capitals (after an elision's apostrophe: L'ÉTÉ) inside a
    sentence in natural case is a word written loud where its lower-case or capitalised form is one piece and
    its capitals are more (the vocabulary spells capitals letter by letter: ▁T R È S, ▁V E R Y; "▁très",
    "▁Paris" are one piece each). An acronym the model knows is one piece as written (USA, TV) and stays; one
    it does not know is no one-piece word in lower case either (SNCF, NASA, PIB: ▁s n c f) and stays. Four
    letters at least, or an accented capital (ÉTÉ: acronyms carry no accents), since short acronyms are often
    words in lower case (UN, EU, WHO: un, eu, who)."""

    def loud(word: str) -> bool:
        last = elided(word)[1]
        if not (last.isalpha() and last.isupper()) or not (len(last) >= 4 or not last.isascii()):
            return False
        lower = last.lower()
        return count(last) > 1 and (count(lower) == 1 or count(lower[0].upper() + lower[1:]) == 1)

    return loud


def loud_words(
    text: str, keep: frozenset[str], loud: Callable[[str], bool], proper: Callable[[str], bool] | None = None
) -> tuple[str, tuple[int, ...]]:
    """`text` with each word `loud` picks in lower case (a name `proper` knows, and the sentence's first word,
    capitalised: PARIS → Paris, ATTENTION : → Attention :), and the indices of those words among the text's
    whitespace-separated words (what `shout_aligned` reads)."""
    out, last, shouted = [], 0, []
    for m in _words_and(keep).finditer(text):
        word = m.group()
        if word in keep or not loud(word):
            continue
        lowered = _lowered(word, proper)
        if not any(ch.isalnum() for ch in text[: m.start()]):  # the sentence's first word keeps its capital
            lowered = lowered[0].upper() + lowered[1:]
        out += [text[last : m.start()], lowered]
        last = m.end()
        joined = m.start() > 0 and not text[m.start() - 1].isspace()  # "(TRÈS": one word with what precedes it
        shouted.append(len(text[: m.start()].split()) - joined)
    out.append(text[last:])
    return "".join(out), tuple(shouted)


def shout_aligned(
    output: str,
    shouted: dict[int, str],
    links: Iterable[tuple[int, int]],
    keep: frozenset[str] = frozenset(),
) -> tuple[str, tuple[int, ...]]:
    """`output` with the translation of each shouted source word in capitals, and the shouted words that
    found none (their indices, in order: the pipeline warns of each). `shouted`: source word index →
    that word's own translation (the model's, of the word alone); `links`: (source word, output word) pairs,
    words split at spaces. An output word is shouted where it is aligned to a shouted word, or next to one so
    aligned (one-model links are often one word off; a shouted word with no link at all is read through the
    links of the words beside it), and is one of the words of its own translation: "très"
    alone is "It's very much." (or "Like", and "Très" "Very": the pipeline gives both forms' translations),
    aligned to "is" in "This is very important." → "This is VERY important.". A
    word whose translation is nowhere near stays as the model wrote it (its emphasis lost, not misplaced).
    Placeholders stay as they are."""
    words = output.split(" ")
    links = list(links)
    loud, missed = set(), []
    for s, translation in sorted(shouted.items()):
        # a word no output word is linked to (each output word links to one source word: "very" in "It's very
        # hot." to "chaud", not "TRÈS") is read through its neighbours' links
        targets = {t for x, t in links if x == s} or {t for x, t in links if abs(x - s) == 1}
        gloss = {bare(w) for w in translation.split()} - {""}
        mine = {n for t in targets for n in range(t - 1, t + 2) if 0 <= n < len(words) and bare(words[n]) in gloss}
        loud |= mine
        if not mine:
            missed.append(s)
    text = " ".join(_map_words(w, keep, lambda i, x: x.upper()) if i in loud else w for i, w in enumerate(words))
    return text, tuple(missed)


def bare(word: str) -> str:
    """A word without the punctuation around it, in lower case (what two translations of a word share)."""
    return word.strip(".,;:!?…\"'«»“”()[]¿¡-–—").lower()
