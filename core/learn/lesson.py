"""What a lesson step is: one typed record that holds its text, its toy, its sentences, the live numbers and
attention table it computes on the model, and what `tt inspect` opens on when the learner leaves into it.

`core.learn.steps` holds the lesson itself (STEPS); `live_numbers` and `live_matrix` run a step's own
functions on a loaded model. A learner's own sentence ("French" or "French | English") is read by `parse_pair`,
the one reader of the '|'; a step keeps its sentences as a tuple and `sentence_line` writes them back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from core.learn.live import Lines, Matrix
from core.learn.slips import Slip
from core.model.attention import FAMILIES, Family

NOTES, TT = "notes", "tt"  # whose toy example a step shows
# What a learner's own sentence replaces (`own_step`): SOURCE the sentence, PAIR a source and its reference
# (only when the learner gave one), NONE nothing (the step's point needs its own sentences).
Takes = Literal["source", "pair", "none"]
SOURCE: Takes = "source"
PAIR: Takes = "pair"
NONE: Takes = "none"


@dataclass(frozen=True)
class Opening:
    """What `tt inspect` shows once the lesson's sentence is decoded to the end: what a learner would
    otherwise press there. Each field is one of inspect's own keys; none set is inspect's first view."""

    name: str  # how the plain lesson names the view ("View: …")
    family: Family | None = None  # the attention family shown (key f); None: inspect's first, cross
    grid: bool = False  # every layer × head for one query (key g)
    mode: str | None = None  # an inspect mode by its action's name: "explain" or "beam"
    insides: str | None = None  # a tab of the insides screen (key v)
    views: bool = False  # the masks and positions screen

    def __post_init__(self) -> None:
        if self.family is not None and self.family not in FAMILIES:
            raise ValueError(f"unknown attention family {self.family!r}; choose one of {', '.join(FAMILIES)}")


@dataclass(frozen=True, kw_only=True)
class Step:
    key: str
    title: str
    idea: tuple[str, ...]  # a few lines, in our words
    formula: str
    toy: Callable[[], Lines] | None  # a small example on tt's code
    toy_source: str  # which note the toy (or its idea) comes from
    toy_by: str = NOTES  # NOTES: the notes' own example, recomputed; TT: an example tt made up for the idea
    sentences: tuple[str, ...]  # what the live view opens on: a source, a source and its reference (PAIR), …
    takes: Takes = SOURCE
    live: Callable[..., Lines]  # (loaded, *sentences) -> the step's numbers on the model
    matrix: Callable[..., Matrix] | None = None  # (loaded, *sentences) -> the attention table it draws
    opens: Opening  # the live view the lesson opens in tt inspect
    look: str  # one line: what to look at in the live numbers, and what it should show
    slips: tuple[Slip, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        wanted = {SOURCE: 1, PAIR: 2}.get(self.takes)
        if wanted is not None and len(self.sentences) != wanted:
            raise ValueError(f"step {self.key!r} takes {self.takes}: {wanted} sentence(s), got {self.sentences}")

    @property
    def source(self) -> str:
        """The sentence `tt inspect` decodes."""
        return self.sentences[0]

    @property
    def reference(self) -> str | None:
        """The source's English reference, for a step that compares with one (inspect opens reference mode)."""
        return self.sentences[1] if self.takes == PAIR else None

    @property
    def sentence_line(self) -> str:
        """The sentences as the plain lesson names them: "source | reference"."""
        return " | ".join(self.sentences)


def parse_pair(text: str) -> tuple[str, str | None]:
    """A learner's "French" or "French | English": the source and its reference (None when not given)."""
    parts = [part.strip() for part in text.split("|")]
    if not parts[0] or len(parts) > 2:
        raise ValueError("give a French sentence (and, after a '|', its English reference)")
    return parts[0], (parts[1] or None) if len(parts) == 2 else None


def own_step(s: Step, own: str | None) -> Step:
    """The step on the learner's own sentence ("source" or "source | reference") where the step can take it."""
    if not own or s.takes == NONE:
        return s
    source, reference = parse_pair(own)
    if s.takes == PAIR:
        return replace(s, sentences=(source, reference)) if reference else s
    return replace(s, sentences=(source,))


def toy_heading(s: Step) -> str:
    """The line above a step's toy: whose example it is, so a made-up one is never taken for the notes'."""
    if s.toy_by == NOTES:
        return f"The notes' example ({s.toy_source}), computed by tt:"
    return f"tt's example (for {s.toy_source}), computed by tt:"


def live_numbers(s: Step, loaded, sentence: str | None = None) -> Lines:
    """The step's numbers on `loaded`, on its own sentences or on the learner's `sentence` (`own_step`)."""
    s = own_step(s, sentence)
    return s.live(loaded, *s.sentences)


def live_matrix(s: Step, loaded, sentence: str | None = None) -> Matrix | None:
    """The attention table the step draws on `loaded`, or None for a step told in numbers only."""
    s = own_step(s, sentence)
    return s.matrix(loaded, *s.sentences) if s.matrix is not None else None
