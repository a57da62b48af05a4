"""Cleaning a real corpus: the rules a parallel text needs before training, each one counted.

`clean_pairs` drops, in this order, pairs that are empty or one-sided, too long in characters,
far apart in length, the same text on both sides, obviously not in the languages the run asks for,
or exact copies of an earlier pair, after decoding HTML character references (`&amp;` → `&`: a model
trained on them writes them); and it restores Europarl v7's lost "œ" where the word is
unambiguous. The piece-level length filters (--max-pieces, --max-ratio) come later, after encoding.
The counts land in the training log, so a user sees what a rule took from their corpus.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from core.data.readers import Pair
from core.text.entities import decode_entities

# The rules in the order they apply; a dropped pair is counted under the first rule it fails.
RULES = ("empty", "too_long", "length_ratio", "same_text", "wrong_language", "duplicate")


@dataclass(frozen=True)
class CleanRules:
    max_chars: int = 1500  # longer sides are dropped before encoding (the piece limit would drop them anyway)
    max_char_ratio: float = 4.0  # characters of the longer side / the shorter, for sides of 20+ characters
    same_text_words: int = 4  # identical sides of this many words or more are untranslated copies
    language_check: bool = True  # drop a side that reads as the other language (French/English only)
    dedup: bool = True
    restore_oe: bool = True  # Europarl v7's missing "œ" (see `restore_oe`)
    decode_entities: bool = True  # `&amp;` → `&` (Multi30k's English is HTML-escaped): core/text/entities.py


# ---------------------------------------------------------------------------------------- œ
# Europarl v7 lost the ligature "œ" in its older sessions: "mise en uvre", "vux", "cur". Each entry is
# a word as the corpus spells it without "œ"; the set holds every form whose stripped spelling is not
# itself a French word. Left alone, because the stripped form is a word of its own: sur (sœur), vu
# (vœu), il (œil), murs (mœurs), surs (sœurs is rare; "surs" is also "sûrs" typed without its accent).
OE_WORDS = (
    "œuvre œuvres œuvrer œuvré œuvrée œuvrées œuvrés œuvrant œuvrent œuvrons œuvrez œuvrait œuvraient œuvrera "
    "œuvreront œuvrerons œuvrerait œuvreraient œuvrerions œuvrions œuvriez œuvra "
    "manœuvre manœuvres manœuvrer manœuvré manœuvrée manœuvrés manœuvrent manœuvrant manœuvrants manœuvrable "
    "désœuvré désœuvrée désœuvrés désœuvrées désœuvrement "
    "cœur cœurs contrecœur rancœur rancœurs écœurant écœurante écœurants écœurantes écœuré écœurée écœurés "
    "écœurées écœurement chœur chœurs "
    "vœux bœuf bœufs œuf œufs nœud nœuds fœtus fœtal fœtale fœtaux fœtales consœur consœurs "
    "œcuménique œcuméniques œcuménisme œnologie œnologique œnologiques œstrogène œstrogènes œstradiol "
    "œillet œillets œillères œsophage"
).split()
OE_AMBIGUOUS = frozenset({"sur", "vu", "il", "murs", "surs", "ils"})
_OE_TABLE = {w.replace("œ", ""): w for w in OE_WORDS if w.replace("œ", "") not in OE_AMBIGUOUS}
_OE_PATTERN = re.compile(r"(?<!\w)(" + "|".join(sorted(_OE_TABLE, key=len, reverse=True)) + r")(?!\w)", re.IGNORECASE)


def _restore_word(match: re.Match[str]) -> str:
    found = match.group(0)
    word = _OE_TABLE[found.lower()]
    if found.isupper() and len(found) > 1:
        return word.upper()
    if found[0].isupper():
        return word[0].upper() + word[1:]
    return word


def restore_oe(text: str) -> tuple[str, int]:
    """(text with "œ" put back into the unambiguous words that lost it, how many words changed)."""
    if _OE_TABLE.keys().isdisjoint(_words(text)):  # most sentences: a set test, no regular expression
        return text, 0
    return _OE_PATTERN.subn(_restore_word, text)


# ---------------------------------------------------------------------------------- language
# Frequent words that are words of one of the two languages only ("a", "on", "est", "son", "pour" ... are
# left out: they are words of both, or common English in French text and back).
STOPWORDS = {
    "fr": frozenset(
        "le la les des du et une que qui dans nous vous je ne pas ce cette ces sont avec mais aussi leur leurs "
        "très été être fait sur au aux ou il elle ils elles notre nos votre".split()
    ),
    "en": frozenset(
        "the of and to is that this these with we you are not have has was were be been which would will "
        "should there their they it for from".split()
    ),
}
_PUNCTUATION = ".,;:!?()[]{}«»\"'“”‘’-–—…/"
_APOSTROPHES = str.maketrans({"'": " ", "’": " "})


def _words(text: str) -> list[str]:
    """Lower-cased words, cheaply: split at spaces and apostrophes ("d'uvre" → "d", "uvre"), punctuation stripped."""
    return [w.strip(_PUNCTUATION) for w in text.lower().translate(_APOSTROPHES).split()]


def looks_like(text: str, lang: str) -> bool | None:
    """False when `text` plainly reads as the other of French/English: two or more of its frequent
    words and none of `lang`'s, in a sentence of five words or more. None when it cannot tell
    (another language pair, a short line)."""
    other = {"fr": "en", "en": "fr"}.get(lang)
    if other is None:
        return None
    words = _words(text)
    if len(words) < 5:
        return None
    own = sum(w in STOPWORDS[lang] for w in words)
    foreign = sum(w in STOPWORDS[other] for w in words)
    return not (foreign >= 2 and own == 0)


def _squash(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


# ------------------------------------------------------------------------------------ the rules
def clean_pairs(
    pairs: Iterable[Pair], rules: CleanRules, counts: Counter[str], src_lang: str = "fr", tgt_lang: str = "en"
) -> Iterator[Pair]:
    """The pairs that pass every rule, in order. `counts[rule]` counts the pairs each rule dropped;
    `counts["oe_restored"]` the words given back their "œ" (French side only), `counts["entities_decoded"]`
    the pairs whose HTML character references were decoded."""
    if rules.decode_entities:
        pairs = _decoded(pairs, counts)
    kept = _passing(pairs, rules, counts, src_lang, tgt_lang)
    if rules.dedup:
        kept = drop_duplicates(kept, counts)
    for p in kept:
        if rules.restore_oe and "fr" in (src_lang, tgt_lang):
            src, tgt, n = p.src, p.tgt, 0
            if src_lang == "fr":
                src, n = restore_oe(src)
            else:
                tgt, n = restore_oe(tgt)
            if n:
                counts["oe_restored"] += n
                p = Pair(src, tgt, p.origin)
        yield p


def _decoded(pairs: Iterable[Pair], counts: Counter[str]) -> Iterator[Pair]:
    for p in pairs:
        src, tgt = decode_entities(p.src), decode_entities(p.tgt)
        if src != p.src or tgt != p.tgt:
            counts["entities_decoded"] += 1
            p = Pair(src, tgt, p.origin)
        yield p


def drop_duplicates(pairs: Iterable[Pair], counts: Counter[str]) -> Iterator[Pair]:
    """The pairs whose exact (source, target) came before dropped, counted under `counts["duplicate"]`."""
    seen: set[tuple[str, str]] = set()
    for p in pairs:
        if (p.src, p.tgt) in seen:
            counts["duplicate"] += 1
            continue
        seen.add((p.src, p.tgt))
        yield p


def _passing(
    pairs: Iterable[Pair], rules: CleanRules, counts: Counter[str], src_lang: str, tgt_lang: str
) -> Iterator[Pair]:
    for p in pairs:
        rule = _failed_rule(p, rules, src_lang, tgt_lang)
        if rule is None:
            yield p
        else:
            counts[rule] += 1


def _failed_rule(p: Pair, rules: CleanRules, src_lang: str, tgt_lang: str) -> str | None:
    src, tgt = p.src.strip(), p.tgt.strip()
    if not src or not tgt:
        return "empty"
    if max(len(src), len(tgt)) > rules.max_chars:
        return "too_long"
    short, long = sorted((len(src), len(tgt)))
    if long >= 20 and long > rules.max_char_ratio * short:
        return "length_ratio"
    if len(src.split()) >= rules.same_text_words and _squash(src) == _squash(tgt):
        return "same_text"
    if rules.language_check and (looks_like(src, src_lang) is False or looks_like(tgt, tgt_lang) is False):
        return "wrong_language"
    return None
