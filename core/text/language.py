"""Which language a text is written in: for a server's `source: "auto"` and `POST /detect`, and for the
warning `tt translate` gives a line that reads as the model's target language rather than its source.

One function, `identify`; py3langid does the work. Its naive Bayes model over byte n-grams (97 languages,
4.5 MB) ships inside the package, so nothing is downloaded at run time. Chosen against lingua, langid and
langdetect by scripts/compare_langid.py (docs/serve.md): restricted to French and English it called 99.8 %
of Tatoeba's and newstest2013's sentences rightly and 99.7 % of 5,959 Tatoeba sentences of 20 characters
or less (lingua 98.7 %), in 30 µs a sentence, and its probabilities are calibrated enough that at 0.9 it
called none of 20,000 French sentences English.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from dataclasses import dataclass

NAMES = {
    "ar": "Arabic",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "it": "Italian",
    "ja": "Japanese",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ru": "Russian",
    "uk": "Ukrainian",
    "zh": "Chinese",
}

# The probability above which a line is taken to be in a language other than the one expected: on
# 20,000 Tatoeba pairs, no French sentence reached it as English, and 99.0 % of the English ones did.
SURE = 0.9


@dataclass(frozen=True)
class Guess:
    language: str  # ISO 639-1 code
    confidence: float  # probability in [0, 1], among the languages asked about; 0 for a text without letters


def identify(text: str, among: Sequence[str]) -> list[Guess]:
    """The languages of `among` (ISO 639-1 codes py3langid knows), most probable first, their
    probabilities summing to 1. A text without a letter (a number, a URL's punctuation, nothing) says
    nothing: every confidence is 0 and the order is `among`'s; ties also keep `among`'s order."""
    among = tuple(dict.fromkeys(among))
    if not among:
        raise ValueError("identify() needs at least one language to choose among")
    if not any(c.isalpha() for c in text):
        return [Guess(code, 0.0) for code in among]
    ranked = dict(_identifier(among).rank(text))
    order = sorted(among, key=lambda code: (-ranked.get(code, 0.0), among.index(code)))
    return [Guess(code, float(ranked.get(code, 0.0))) for code in order]


# Words (and letters) that one of tt's two languages has and the other does not: a text with some of one's and
# none of the other's is plainly in it, and the warnings below need not load py3langid's model (~0.35 s of a
# cold `tt translate`, most of its time after `import torch`) to say nothing.
_MARKERS = {
    "fr": frozenset(
        "le la les des du de un une est et je tu il elle nous vous ils elles ne pas que qui dans pour sur avec "
        "au aux ce cette ces mon ma mes son sa ses sont suis été c'est j'ai n'est l'".split()
    ),
    "en": frozenset(
        "the is are was were and of to in i you he she we they it this that with for on not be have has "
        "my his her their i'm it's don't".split()
    ),
}
_ACCENTED = frozenset("éèêàâçôûùîïœë")


def plainly(text: str, language: str) -> bool:
    """Whether `text` is plainly in `language` (fr or en) rather than the other: marker words of its own and
    none of the other's (French: accented letters count too). False says nothing."""
    if language not in _MARKERS:
        return False
    other = "en" if language == "fr" else "fr"
    words = {w.strip(".,;:!?«»\"()'’").replace("’", "'") for w in text.lower().split()}
    words |= {w.split("'")[0] + "'" for w in words if "'" in w}  # l'homme → l'
    own, theirs = bool(words & _MARKERS[language]), bool(words & _MARKERS[other])
    accents = any(c in _ACCENTED for c in text.lower())
    if language == "fr":
        own = own or accents
    else:
        theirs = theirs or accents
    return own and not theirs


def wrong_language(text: str, source: str, target: str) -> str | None:
    """A warning when `text`, given to a source→target model, is with probability SURE or more in the
    target language rather than the source (English given to the French→English model); else None."""
    if plainly(text, source):
        return None
    best = identify(text, (source, target))[0]
    if best.language != target or best.confidence < SURE:
        return None
    src, tgt = name(source), name(target)
    return f"this reads as {tgt}, not {src} ({best.confidence:.0%} sure): the model translates {src} to {tgt}"


def name(code: str) -> str:
    """A language's English name, or its code when tt does not know it."""
    return NAMES.get(code, code)


@functools.lru_cache(maxsize=8)
def _identifier(among: tuple[str, ...]):
    """py3langid's identifier restricted to `among`. Classifying changes nothing in it, so threads share it."""
    every = _model()
    unknown = sorted(set(among) - set(every.nb_classes))
    if unknown:
        raise ValueError(f"no language model for {', '.join(unknown)}")
    restricted = copy.copy(every)  # set_languages rebinds the copy's arrays, not the model's
    restricted.set_languages(list(among))
    return restricted


@functools.lru_cache(maxsize=1)
def _model():
    """The model of all 97 languages, read once (~0.4 s: it is stored compressed)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
