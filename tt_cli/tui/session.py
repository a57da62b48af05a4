"""The model side of `tt inspect`: the greedy Stepper, a what-if branch, beam search and Eq. 1.

A `Session` is used from the App's model thread only. Every method returns data that the UI thread
may keep and draw (a `Decoding` copied out of the Steppers, beam steps, an Explanation), so no
widget ever holds a Stepper or the model, and nothing the UI holds changes under it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.analysis.attribute import Attribution, attribute
from core.analysis.beam import BeamStep, beam_steps
from core.analysis.explain import Explanation, explain
from core.analysis.lens import LensStep, logit_lens
from core.analysis.patterns import HeadKind, sentence_kinds
from core.analysis.reference import RefComparison, compare_pairs, encode_pairs
from core.analysis.scrub import ScrubPoint
from core.analysis.sinks import head_sinks
from core.analysis.tracefile import TraceFile
from core.checkpoint import LoadedModel
from core.data.tokenizer import Tokenizer
from core.decode.stepper import Stepper
from core.decode.trace import BOS_PIECE, SourceTrace, StepTrace, trace_steps
from core.errors import TTError
from core.model.attention import Head, HeadMask
from tt_cli.tui.state import ATTRIBUTIONS, Cell, Dims

MASK_PIECES = 24  # decoder inputs drawn in the masks view: more would not fit a terminal


@dataclass(frozen=True, eq=False)
class Line:
    """One decoding of the sentence (the greedy one or the what-if branch), as it stands."""

    steps: tuple[StepTrace, ...]
    finished: bool
    text: str
    score: float  # sum of the chosen pieces' log p


@dataclass(frozen=True, eq=False)
class Ablated:
    """Whole greedy decodings without and with some heads: what switching them off changed."""

    heads_off: tuple[Head, ...]  # (family, layer, head), sorted
    intact: Line
    line: Line


@dataclass(frozen=True, eq=False)
class Decoding:
    """What the model has done so far: a snapshot, never changed after it is made."""

    source: SourceTrace
    original: Line
    branch: Line | None
    target_inputs: tuple[int, ...]  # what the active line's decoder was fed: BOS, y_0 … y_{t-1}
    target_pieces: tuple[str, ...]
    limit: int  # most output pieces (the length limit of greedy decoding)
    ablated: Ablated | None = None  # the greedy decoding with heads switched off, when some are

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
    live = True  # a model runs behind it: what-if, beam, explain and the masks view work
    attributions = ATTRIBUTIONS[1:]  # what key i cycles through after attention

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self.dims = Dims.of(loaded.cfg)
        self.original: Stepper | None = None
        self.branch: Stepper | None = None
        self.limit = 0
        self.ablated: Ablated | None = None
        self._intact: Line | None = None  # the whole greedy output of the sentence, made once

    @property
    def active(self) -> Stepper:
        return self.branch or self.original

    def snapshot(self) -> Decoding:
        s = self.active
        inputs = tuple(s.target_inputs)
        return Decoding(
            source=s.source,
            original=line(self.original),
            branch=line(self.branch) if self.branch else None,
            target_inputs=inputs,
            target_pieces=tuple(self.loaded.tokenizer.pieces(inputs)),
            limit=self.limit,
            ablated=self.ablated,
        )

    def _source_tensor(self) -> torch.Tensor:
        device = next(self.loaded.model.parameters()).device
        return torch.tensor([self.original.source.tokens], device=device)  # (1, S)

    # ------------------------------------------------------------------------------ decoding
    def start(self, text: str) -> Decoding:
        self.original, self.branch = Stepper(self.loaded, text), None
        self.ablated = self._intact = None
        self.limit = self.original.limit  # the Stepper's own length limit: one rule, one place
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
        """Back to the first step (as the app starts, and as a replay restarts)."""
        self.active.restart()
        self.active.step()
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

    def heads_off(self, heads: frozenset[Head]) -> Decoding:
        """Re-run greedy decoding of the sentence with `heads` switched off (all of it: a head off
        changes every step); the stepping view stays on the intact model."""
        if not heads:
            self.ablated = None
            return self.snapshot()
        text = self.original.source.text
        mask = HeadMask.ones(self.loaded.cfg)
        for family, layer, head in heads:
            mask = mask.off(family, layer, head)
        ablated = self._run(Stepper(self.loaded, text, head_mask=mask))
        self.ablated = Ablated(tuple(sorted(heads)), self._whole(), line(ablated))
        return self.snapshot()

    @staticmethod
    def _run(stepper: Stepper) -> Stepper:
        stepper.run()
        return stepper

    # ------------------------------------------------------------------------------ other views
    def beam(self, beam_size: int, alpha: float) -> list[BeamStep]:
        return beam_steps(self.loaded.model, self._source_tensor(), beam_size, alpha)

    def explain(self, decoding: Decoding, cell: Cell) -> Explanation:
        """Eq. 1 for the cell, on the decoding the reader is looking at (not whatever came later)."""
        return explain(
            self.loaded.model,
            decoding.source.tokens,
            list(decoding.target_inputs),
            family=cell.family,
            layer=cell.layer,
            head=cell.head or 0,
            query=cell.query,
            src_pieces=decoding.source.pieces,
            tgt_pieces=list(decoding.target_pieces),
        )

    def attribute(self, decoding: Decoding, method: str) -> Attribution:
        """Gradient attribution of every step of the decoding on screen to the source and the prefix."""
        return attribute(self.loaded, list(decoding.source.tokens), [s.token for s in decoding.steps], method=method)

    def lens(self, decoding: Decoding, top_k: int) -> list[LensStep]:
        """The logit lens of every step on screen: each decoder layer's top-k, teacher-forced on them."""
        return logit_lens(self.loaded, list(decoding.source.tokens), [s.token for s in decoding.steps], top_k=top_k)

    def reference(self, reference: str) -> RefComparison:
        """The sentence's reference translation teacher-forced against the model's own choices."""
        return compare_pairs(self.loaded, [(self.original.source.text, reference)])[0]

    def sinks(self, reference: str | None) -> dict[Head, list[str]]:
        """(family, layer, head) → what the head parks its attention on (core/analysis/sinks.py), for
        the heads that do, teacher-forced on this sentence and its reference, else its greedy output."""
        text = self.original.source.text
        pairs = [(text, reference or self._whole().text)]
        return {(h.family, h.layer, h.head): h.parks_on for h in head_sinks(self.loaded, pairs) if h.parks_on}

    def kinds(self, reference: str | None) -> dict[Head, HeadKind]:
        """Each self-attention head's pattern kind (core/analysis/patterns.py) on the sentence and its
        reference, teacher-forced, else its whole greedy output: the same pair the sink marks read."""
        source = self.original.source
        if reference is None:
            return sentence_kinds(source, self._whole().steps)
        ref_ids = encode_pairs(self.loaded, [(source.text, reference)])[0][1]  # EOS last, cut as --ref cuts it
        return sentence_kinds(source, trace_steps(self.loaded, source.tokens, ref_ids, top_k=1)[1])

    def _whole(self) -> Line:
        """The sentence's whole greedy output on the intact model, decoded once."""
        if self._intact is None:
            self._intact = line(self._run(Stepper(self.loaded, self.original.source.text)))
        return self._intact

    def positions(self, n: int) -> tuple[torch.Tensor, str]:
        """The positional encodings added to the first n source embeddings (n, d_model), and their kind."""
        pos = self.loaded.model.src_pos
        with torch.inference_mode():
            return pos.positions(n).detach().cpu(), pos.kind


class TraceSession:
    """A saved trace (`tt translate --trace`) replayed without the model: stepping walks the stored
    steps. What needs the model says so in a TTError, which the App shows as a notice."""

    live = False

    def __init__(self, trace: TraceFile) -> None:
        self.trace = trace
        steps, source = trace.steps, trace.source
        first = steps[0] if steps else None
        vocab = (
            first.logits.numel()
            if first is not None and first.logits is not None
            else len(first.candidates)
            if first
            else 1
        )
        self.dims = Dims(
            n_encoder_layers=max(len(source.encoder_self), 1),
            n_decoder_layers=max(len(first.cross) if first else 1, 1),
            h=source.encoder_self[0].size(0) if source.encoder_self else first.cross[0].size(0) if first else 1,
            vocab_size=max(vocab, 1),
        )
        self.shown = 0  # steps on screen

    def snapshot(self) -> Decoding:
        steps = tuple(self.trace.steps[: self.shown])
        done = self.shown == len(self.trace.steps)
        text = (
            self.trace.translation
            if done
            else "".join(s.piece for s in steps if not s.piece.startswith("</")).replace("\u2581", " ").strip()
        )
        score = sum(s.logprob for s in steps)
        pieces = (BOS_PIECE, *(s.piece for s in steps[:-1]))  # what the decoder was fed: BOS, y_0 … y_{t-1}
        return Decoding(
            source=self.trace.source,
            original=Line(steps, done, text, score),
            branch=None,
            target_inputs=(),
            target_pieces=pieces,
            limit=len(self.trace.steps),
        )

    def _show(self, n: int) -> Decoding:
        self.shown = min(max(n, 1 if self.trace.steps else 0), len(self.trace.steps))
        return self.snapshot()

    def start(self, text: str) -> Decoding:
        return self._show(1)

    def step(self) -> Decoding:
        return self._show(self.shown + 1)

    def back(self) -> Decoding:
        return self._show(self.shown - 1)

    def run(self) -> Decoding:
        return self._show(len(self.trace.steps))

    def restart(self) -> Decoding:
        return self._show(1)

    def drop_branch(self) -> Decoding:
        return self.snapshot()

    def needs_model(self, what: str) -> TTError:
        return TTError(
            f'{what} needs the model: this is a saved trace; run tt inspect "{self.trace.source.text}" to have it live'
        )

    def what_if(self, at: int, token: int) -> Decoding:
        raise self.needs_model("what-if")

    def heads_off(self, heads: frozenset[Head]) -> Decoding:
        raise self.needs_model("switching a head off")

    def beam(self, beam_size: int, alpha: float) -> list[BeamStep]:
        raise self.needs_model("beam mode")

    def explain(self, decoding: Decoding, cell: Cell) -> Explanation:
        raise self.needs_model("explain mode")

    def positions(self, n: int) -> tuple[torch.Tensor, str]:
        raise self.needs_model("the masks and positions view")

    @property
    def attributions(self) -> tuple[str, ...]:
        """The attribution the trace holds (tt translate --attribution M --trace F), if any."""
        return (self.trace.attribution.method,) if self.trace.attribution is not None else ()

    def attribute(self, decoding: Decoding, method: str) -> Attribution:
        """The trace's own attribution, for every stored step (the heatmap shows the steps on screen)."""
        if method not in self.attributions:
            raise self.needs_model("attribution")
        return self.trace.attribution

    def lens(self, decoding: Decoding, top_k: int) -> list[LensStep]:
        raise self.needs_model("the logit lens")

    def reference(self, reference: str) -> RefComparison:
        raise self.needs_model("reference mode")

    def sinks(self, reference: str | None) -> dict[Head, list[str]]:
        raise self.needs_model("marking attention sinks")

    def kinds(self, reference: str | None) -> dict[Head, HeadKind]:
        """The heads' pattern kinds read off the weights the trace holds: every stored step, not only
        those on screen (a reference needs the model, so there is none here)."""
        return sentence_kinds(self.trace.source, self.trace.steps)


class ScrubSession(TraceSession):
    """A run's checkpoints (core/analysis/scrub.py), each replayed like a trace: [ and ] move to the
    previous or next checkpoint and keep the step on screen, so one step is seen as it was learned."""

    def __init__(self, points: list[ScrubPoint]) -> None:
        if not points:
            raise TTError("the run has no checkpoints to scrub")
        self.points, self.at = points, len(points) - 1  # the newest first: the model as it ended
        super().__init__(self._trace())

    def _trace(self) -> TraceFile:
        p = self.points[self.at]
        return TraceFile(p.source, p.steps, p.translation, model=str(p.path))

    def checkpoint_by(self, delta: int) -> Decoding:
        self.at = min(max(self.at + delta, 0), len(self.points) - 1)
        self.trace = self._trace()
        return self._show(self.shown)

    @property
    def where(self) -> str:
        return f"training step {self.points[self.at].step} (checkpoint {self.at + 1} of {len(self.points)})"
