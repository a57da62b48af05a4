"""What the text pipeline is asked to do: its options and the placeholder schemes it may use.

Plain data, nothing to compile: a client that only sends these options to a server (a warm `tt
translate`) imports this and none of the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# Pools of placeholders, tried in order; one a placeholder already in the text is skipped.
NAME_POOL = ("Boston", "Chicago", "Hokkaido", "Kobe", "Hawaii", "Texas", "Harvard", "Lincoln", "Kyoto", "Osaka")
NUMBER_POOL = ("99", "9", "8", "50", "30", "20", "500", "200", "25", "16")
# For a person's name: the names Tatoeba's sentences are full of, so the model keeps one as a person
# (a city in its place reads as a place: "a rencontré Chicago" → "met in Chicago"); then the city names.
PEOPLE_POOL = ("Tom", "Mary", "John") + NAME_POOL
NUMERIC_KINDS = frozenset({"number", "ordinal", "time", "duration", "date"})
# What the copy scheme leaves in the text for the model to copy. Not times and dates: a model that copies
# 1987 still writes 14 h 35 as "14" and a timestamp's digits its own way (docs/text.md).
COPIED_KINDS = frozenset({"number", "name"})


@dataclass(frozen=True)
class Scheme:
    """Which placeholders stand for which kinds of span."""

    name: str
    names: tuple[str, ...]  # for URLs, e-mail, emoji, code, glossary terms, unknown characters
    numbers: tuple[str, ...]  # for numbers, times and dates
    # Numbers and names (COPIED_KINDS) left as written for the model to copy (checked in its output, a
    # number written the English way there): a model that learned from text full of them copies them,
    # where a placeholder reads to it as something else ("Il a Boston ans" → "He is Boston.").
    copies: bool = False
    people: tuple[str, ...] = PEOPLE_POOL  # for names (runs of capitalised words)

    def stands_in(self, kind: str) -> bool:
        """Whether a span of this kind gets a placeholder (else it stays in the text for the model to copy)."""
        return not (self.copies and kind in COPIED_KINDS)

    def pool(self, kind: str) -> tuple[str, ...]:
        if kind in NUMERIC_KINDS:
            return self.numbers
        return self.people if kind == "name" else self.names


_BRACKETS = tuple(f"⟨{i}⟩" for i in range(1, 11))
_HASHES = tuple(f"#{i}" for i in range(1, 11))
SCHEMES = {
    "copy": Scheme("copy", NAME_POOL, NAME_POOL, copies=True),  # times and dates: names, as "names" does
    "names": Scheme("names", NAME_POOL, NAME_POOL),
    "names-kyoto": Scheme(
        "names-kyoto",
        NAME_POOL[-2:] + NAME_POOL[:-2],
        NAME_POOL[-2:] + NAME_POOL[:-2],
        people=PEOPLE_POOL[1:3] + PEOPLE_POOL[:1] + NAME_POOL[-2:] + NAME_POOL[:-2],
    ),
    "typed": Scheme("typed", NAME_POOL, NUMBER_POOL),
    "brackets": Scheme("brackets", _BRACKETS, tuple(f"⟨{i}⟩" for i in range(11, 21)), people=_BRACKETS),
    "hash": Scheme("hash", _HASHES, tuple(f"#{i}" for i in range(11, 21)), people=_HASHES),
}
DEFAULT_SCHEME = SCHEMES["copy"]


def learned_scheme(tokens: tuple[str, ...]) -> Scheme:
    """The placeholders of a model trained with them (its card's `placeholder_tokens`): pieces it learned to
    copy, for every kind, numbers and names still left as written for it to copy."""
    return Scheme(
        "learned", tokens, tokens, copies=True, people=tokens
    )  # measured on the copy list and on news (docs/text.md)


FALLBACK_SCHEMES = (SCHEMES["names"], SCHEMES["names-kyoto"], SCHEMES["typed"])  # for a sentence that lost one


@dataclass(frozen=True)
class TextOptions:
    split: bool = True  # split lines into sentences (off: each line is one sentence)
    protect: bool = True  # numbers, URLs, e-mail, emoji, code, markup, unknown characters; prices spelled
    names: bool = True  # with protect: runs of capitalised words (Angela Merkel) copied as written
    case: bool = True  # ALL-CAPS and Title Case through their natural case
    accents: bool = True  # a sentence typed without accents given them back where the word is clear
    # A sentence ends with its source's final punctuation (none, . ! ? … : ;): the model adds a period to
    # a heading, a URL or a UI string, and writes "Merci !" as "Thank you." (core.text.checks).
    follow_stop: bool = True
    terms: tuple[tuple[str, str], ...] = ()  # glossary (French, English); forced even with protect off
    languages: tuple[str, str] = ("fr", "en")  # the model's (source, target): what "the wrong language" means
    scheme: Scheme = DEFAULT_SCHEME
    # A sentence whose output lost a placeholder is translated again with each of these placeholder
    # sets in turn, while it still loses one; the output that lost fewest is kept.
    fallbacks: tuple[Scheme, ...] = FALLBACK_SCHEMES
    # Which lowered word of an ALL-CAPS line is a name to capitalise again (PARIS → Paris, not "paris"): the
    # model's vocabulary (core.text.case.names_by_pieces, set by core.api); None lowers every word.
    proper: Callable[[str], bool] | None = field(default=None, compare=False)
    # Which word in capitals inside a sentence in natural case is a word written loud, lowered for the model and
    # its translation written in capitals again (TRÈS → très → very → VERY): the model's vocabulary
    # (core.text.case.loud_by_pieces, set by core.api); None leaves such words as written.
    loud: Callable[[str], bool] | None = field(default=None, compare=False)
    # Which word is one of the model's vocabulary (core.text.checks.known_by_pieces, set by core.api): a capitalised
    # word that is not is a name, and a translation that lost it is warned of (checks.missing_names); None: no check.
    known: Callable[[str], bool] | None = field(default=None, compare=False)
    # The placeholder pieces the model learned in training (its card's, set by core.api): one in its output that
    # stands for no span of the sentence is taken out and named in a warning, whatever the scheme.
    model_placeholders: tuple[str, ...] = ()


def hypotheses_wanted(method: str, beam: int) -> int:
    """How many of beam search's finished hypotheses the pipeline asks for, best first: every one, so a
    sentence whose best translation lost a protected span can take the next that keeps it (pipeline.py);
    greedy search and sampling have one."""
    return max(beam, 1) if method == "beam" else 1
