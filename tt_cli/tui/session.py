"""The model side of `tt inspect`: the greedy Stepper, a what-if branch, beam search and Eq. 1.

A `Session` is used from the App's model thread only. Every method returns data that the UI thread
may keep and draw (a `Decoding` copied out of the Steppers, beam steps, an Explanation), so no
widget ever holds a Stepper or the model, and nothing the UI holds changes under it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.analysis.beam import BeamStep, beam_steps
from core.analysis.explain import Explanation, explain
from core.analysis.trace import SourceTrace, StepTrace
from core.checkpoint import LoadedModel
from core.data.tokenizer import Tokenizer
from core.decode.search import output_limits
from core.decode.stepper import Stepper
from tt_cli.tui.state import Cell

EXTRA_LEN = 50  # output pieces beyond the source length: the Stepper's and beam search's default
MASK_PIECES = 24  # decoder inputs drawn in the masks view: more would not fit a terminal


@dataclass(frozen=True, eq=False)
class Line:
    """One decoding of the sentence (the greedy one or the what-if branch), as it stands."""

    steps: tuple[StepTrace, ...]
    finished: bool
    text: str
    score: float  # sum of the chosen pieces' log p


@dataclass(frozen=True, eq=False)
class Decoding:
    """What the model has done so far: a snapshot, never changed after it is made."""

    source: SourceTrace
    original: Line
    branch: Line | None
    target_inputs: tuple[int, ...]  # what the active line's decoder was fed: BOS, y_0 … y_{t-1}
    target_pieces: tuple[str, ...]
    limit: int  # most output pieces (the length limit of greedy decoding)

    @property
    def active(self) -> Line:
        return self.branch or self.original

    @property
    def steps(self) -> tuple[StepTrace, ...]:
        return self.active.steps

    def mask_inputs(self) -> tuple[list[int], list[str]]:
        """Decoder inputs so far plus the next one (ids, pieces): the target side the masks view draws."""
        last = self.steps[-1:]
        ids = [*self.target_inputs, *(s.token for s in last)][:MASK_PIECES]
        return ids, [*self.target_pieces, *(s.piece for s in last)][:MASK_PIECES]


def line(stepper: Stepper) -> Line:
    return Line(tuple(stepper.steps), stepper.finished, stepper.output_text, stepper.score)


def find_piece(tokenizer: Tokenizer, typed: str, unk_id: int) -> int | None:
    """The piece id for what a reader typed: as is, as a word start ('▁' + it), spaces as '▁'."""
    for candidate in (typed, "\u2581" + typed, typed.replace(" ", "\u2581")):
        token = tokenizer.piece_id(candidate)
        if token != unk_id or candidate == "<unk>":
            return token
    return None


class Session:
    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self.original: Stepper | None = None
        self.branch: Stepper | None = None
        self.limit = 0

    @property
    def active(self) -> Stepper:
        return self.branch or self.original

    def snapshot(self) -> Decoding:
        s = self.active
        inputs = tuple(s.target_inputs)
        return Decoding(
            source=s.source, original=line(self.original), branch=line(self.branch) if self.branch else None,
            target_inputs=inputs, target_pieces=tuple(self.loaded.tokenizer.pieces(inputs)), limit=self.limit,
        )

    def _source_tensor(self) -> torch.Tensor:
        device = next(self.loaded.model.parameters()).device
        return torch.tensor([self.original.source.tokens], device=device)  # (1, S)

    # ------------------------------------------------------------------------------ decoding
    def start(self, text: str) -> Decoding:
        self.original, self.branch = Stepper(self.loaded, text), None
        self.limit = int(output_limits(self.loaded.model, self._source_tensor(), None, EXTRA_LEN)[0])
        self.original.step()
        return self.snapshot()

    def step(self) -> Decoding:
        self.active.step()
        return self.snapshot()

    def back(self) -> Decoding:
        self.active.back()
        return self.snapshot()

    def run(self) -> Decoding:
        self.active.run()
        return self.snapshot()

    def restart(self) -> Decoding:
        self.active.restart()
        return self.snapshot()

    def what_if(self, at: int, token: int) -> Decoding:
        """Take `token` instead at step `at` of the active line, and decode on from there (a branch)."""
        branch = self.active.branch(at, token)
        self.original.run()  # the comparison needs the original's whole output
        self.branch = branch
        return self.snapshot()

    def drop_branch(self) -> Decoding:
        self.branch = None
        return self.snapshot()

    # ------------------------------------------------------------------------------ other views
    def beam(self, beam_size: int, alpha: float) -> list[BeamStep]:
        return beam_steps(self.loaded.model, self._source_tensor(), beam_size, alpha, EXTRA_LEN)

    def explain(self, decoding: Decoding, cell: Cell) -> Explanation:
        """Eq. 1 for the cell, on the decoding the reader is looking at (not whatever came later)."""
        return explain(
            self.loaded.model, decoding.source.tokens, list(decoding.target_inputs), family=cell.family,
            layer=cell.layer, head=cell.head or 0, query=cell.query,
            src_pieces=decoding.source.pieces, tgt_pieces=list(decoding.target_pieces),
        )

    def positions(self, n: int) -> tuple[torch.Tensor, str]:
        """The positional encodings added to the first n source embeddings (n, d_model), and their kind."""
        pos = self.loaded.model.src_pos
        with torch.inference_mode():
            return pos.positions(n).detach().cpu(), pos.kind
