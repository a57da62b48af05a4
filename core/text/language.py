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


def wrong_language(text: str, source: str, target: str) -> str | None:
    """A warning when `text`, given to a source→target model, is with probability SURE or more in the
    target language rather than the source (English given to the French→English model); else None."""
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
