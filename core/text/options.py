"""What the text pipeline is asked to do: its options and the placeholder schemes it may use.

Plain data, nothing to compile: a client that only sends these options to a server (a warm `tt
translate`) imports this and none of the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

# Pools of placeholders, tried in order; one a placeholder already in the text is skipped.
NAME_POOL = ("Boston", "Chicago", "Hokkaido", "Kobe", "Hawaii", "Texas", "Harvard", "Lincoln", "Kyoto", "Osaka")
NUMBER_POOL = ("99", "9", "8", "50", "30", "20", "500", "200", "25", "16")
NUMERIC_KINDS = frozenset({"number", "time", "date"})


@dataclass(frozen=True)
class Scheme:
    """Which placeholders stand for which kinds of span."""

    name: str
    names: tuple[str, ...]  # for URLs, e-mail, emoji, code, glossary terms, unknown characters
    numbers: tuple[str, ...]  # for numbers, times and dates

    def pool(self, kind: str) -> tuple[str, ...]:
        return self.numbers if kind in NUMERIC_KINDS else self.names


SCHEMES = {
    "typed": Scheme("typed", NAME_POOL, NUMBER_POOL),
    "names": Scheme("names", NAME_POOL, NAME_POOL),
    "names-kyoto": Scheme("names-kyoto", NAME_POOL[-2:] + NAME_POOL[:-2], NAME_POOL[-2:] + NAME_POOL[:-2]),
    "brackets": Scheme("brackets", tuple(f"⟨{i}⟩" for i in range(1, 11)), tuple(f"⟨{i}⟩" for i in range(11, 21))),
    "hash": Scheme("hash", tuple(f"#{i}" for i in range(1, 11)), tuple(f"#{i}" for i in range(11, 21))),
}
DEFAULT_SCHEME = SCHEMES["names"]  # measured best on the copy list (docs/text.md)
FALLBACK_SCHEMES = (SCHEMES["names-kyoto"], SCHEMES["typed"])  # further tries for a sentence that lost one


@dataclass(frozen=True)
class TextOptions:
    split: bool = True  # split lines into sentences (off: each line is one sentence)
    protect: bool = True  # numbers, URLs, e-mail, emoji, code, markup, unknown characters
    case: bool = True  # ALL-CAPS and Title Case through their natural case
    accents: bool = True  # a sentence typed without accents given them back where the word is clear
    # Drop the period the model adds to a source without a final stop: on for documents (a Markdown
    # heading, a subtitle cue); off for typed lines, where "Je suis étudiant" means a sentence.
    follow_stop: bool = False
    terms: tuple[tuple[str, str], ...] = ()  # glossary (French, English); forced even with protect off
    scheme: Scheme = DEFAULT_SCHEME
    # A sentence whose output lost a placeholder is translated again with each of these placeholder
    # sets in turn, while it still loses one; the output that lost fewest is kept.
    fallbacks: tuple[Scheme, ...] = FALLBACK_SCHEMES
