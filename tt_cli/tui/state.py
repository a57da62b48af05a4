"""What `tt inspect` is asked to show, as a plain value: no Textual, no model.

`ViewState` is frozen: every key action is a pure method that returns the next state, so the App
only assigns it to a reactive attribute and the redraw comes from the watcher. The limits (layers,
heads, vocabulary) come with the state, so each method can keep it valid on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from core.data.tokenizer import Tokenizer
from core.decode.trace import Candidate, StepTrace, top_candidates
from core.model.attention import FAMILIES, Head, n_layers_of
from core.model.config import ModelConfig

# The f key steps from cross (what a translation is read through) towards the encoder.
FAMILY_KEY_ORDER = FAMILIES[::-1]
Mode = Literal["dist", "beam", "explain", "lens", "ref"]  # what the right-hand panel shows
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.05, 20.0
MAX_TOP_K = 50
ATTRIBUTIONS = (None, "ixg", "ig")  # what the heatmap reads: attention, input×gradient, integrated gradients


@dataclass(frozen=True)
class Dims:
    """The model's sizes that bound a view."""

    n_encoder_layers: int = 1
    n_decoder_layers: int = 1
    h: int = 1
    vocab_size: int = MAX_TOP_K

    @classmethod
    def of(cls, cfg: ModelConfig) -> Dims:
        return cls(cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.h, cfg.vocab_size)


@dataclass(frozen=True)
class Cell:
    """One attention weight: the family, layer and head (None = the mean), its query and key."""

    family: str
    layer: int
    head: int | None
    query: int  # a source position (encoder_self) or a decoding step
    key: int

    @property
    def note(self) -> str:
        """What explain mode must say besides the numbers: which query vector, which head."""
        note = "" if self.head is not None else "(the mean of heads has no single q·k: head 1)"
        if self.family != "encoder_self":
            note = f"the decoder input that produced step {self.query + 1}'s piece {note}".rstrip()
        return note


@dataclass(frozen=True)
class ViewState:
    family: str = "cross"  # one of core.model.attention.FAMILIES
    layer: int = 0
    head: int | None = None  # None = the mean of the heads
    grid: bool = False  # every layer × head for one query instead of one head's matrix
    mode: Mode = "dist"
    temperature: float = 1.0  # re-shapes the shown distribution only; decoding stays greedy
    top_k: int = 10  # candidates shown
    beam_index: int = 0  # the beam step shown in beam mode
    cell: tuple[int, int] = (0, 0)  # the heatmap's selected (row, column)
    enc_query: int = 0  # the source position the encoder grid shows
    heads_off: frozenset[Head] = frozenset()  # switched off: greedy decoding re-runs without them
    links: bool = False  # the cross-attention matrix shows word links (the model's rule) instead of weights
    attribution: str | None = None  # "ixg"/"ig": the heatmap shows gradient attribution instead of attention
    dims: Dims = Dims()

    @classmethod
    def for_model(cls, cfg: ModelConfig, *, top_k: int = 10) -> ViewState:
        return cls.for_dims(Dims.of(cfg), top_k=top_k)

    @classmethod
    def for_dims(cls, dims: Dims, *, top_k: int = 10) -> ViewState:
        return cls(top_k=min(max(top_k, 1), min(MAX_TOP_K, dims.vocab_size)), dims=dims)

    @property
    def picture(self) -> tuple:
        """What the heatmap's picture depends on (the cursor excepted)."""
        return (
            self.family,
            self.layer,
            self.head,
            self.grid,
            self.enc_query,
            self.heads_off,
            self.links,
            self.attribution,
        )

    @property
    def n_layers(self) -> int:
        return n_layers_of(self.dims, self.family)

    # ------------------------------------------------------------------------------ key actions
    def next_family(self) -> ViewState:
        return self.at_family(FAMILY_KEY_ORDER[(FAMILY_KEY_ORDER.index(self.family) + 1) % len(FAMILY_KEY_ORDER)])

    def at_family(self, family: str) -> ViewState:
        """The same view on `family` (one of FAMILIES), its layer kept within the family's."""
        if family not in FAMILY_KEY_ORDER:
            raise ValueError(f"unknown attention family {family!r}; choose one of {', '.join(FAMILY_KEY_ORDER)}")
        moved = replace(self, family=family)
        return replace(moved, layer=min(self.layer, moved.n_layers - 1))

    def layer_by(self, delta: int) -> ViewState:
        return replace(self, layer=(self.layer + delta) % self.n_layers)

    def head_by(self, delta: int) -> ViewState:
        order = [None, *range(self.dims.h)]  # the mean first, then each head
        return replace(self, head=order[(order.index(self.head) + delta) % len(order)])

    def toggle_grid(self) -> ViewState:
        return replace(self, grid=not self.grid)

    def toggle_links(self) -> ViewState:
        """Raw attention ↔ word links; the links are drawn on the cross-attention matrix (f to reach it)."""
        return replace(self, links=not self.links)

    def next_attribution(self, methods: tuple[str, ...] = ATTRIBUTIONS[1:]) -> ViewState:
        """Attention → input×gradient → integrated gradients → attention, for the same steps
        (`methods`: the attributions there are; a replayed trace holds one at most)."""
        cycle = (None, *methods)
        at = cycle.index(self.attribution) if self.attribution in cycle else 0
        return replace(self, attribution=cycle[(at + 1) % len(cycle)])

    def temperature_by(self, factor: float) -> ViewState:
        return replace(self, temperature=min(max(self.temperature * factor, MIN_TEMPERATURE), MAX_TEMPERATURE))

    def top_k_by(self, delta: int) -> ViewState:
        return replace(self, top_k=min(max(self.top_k + delta, 1), min(MAX_TOP_K, self.dims.vocab_size)))

    def toggle_mode(self, mode: Mode) -> ViewState:
        """A second press of the same mode's key goes back to the distribution."""
        return replace(self, mode="dist" if self.mode == mode else mode)

    def beam_at(self, index: int, n_steps: int) -> ViewState:
        """Show beam step `index` (negative counts from the end), kept within 0..n_steps-1."""
        if index < 0:
            index += n_steps
        return replace(self, beam_index=min(max(index, 0), max(n_steps - 1, 0)))

    def selected_head(self) -> Head | None:
        """The one head the view points at: the grid's cursor row, else the shown head (None: the mean)."""
        if self.grid:
            return Head(self.family, self.cell[0] // self.dims.h, self.cell[0] % self.dims.h)
        return None if self.head is None else Head(self.family, self.layer, self.head)

    def toggle_head_off(self) -> ViewState:
        """Switch the selected head off, or back on when it is off already."""
        head = self.selected_head()
        return self if head is None else replace(self, heads_off=self.heads_off ^ {head})

    def select(self, row: int, col: int) -> ViewState:
        """The heatmap's cursor moved. In encoder self-attention a row is a source position, and it
        stays the query that the encoder grid (g) shows."""
        moved = replace(self, cell=(row, col))
        if self.family == "encoder_self" and not self.grid:
            moved = replace(moved, enc_query=row)
        return moved

    # ------------------------------------------------------------------------------ reading
    def selected(self, n_steps: int, n_source: int) -> Cell | None:
        """The selected cell as an attention weight, or None when there is none to read."""
        row, col = self.cell
        if self.grid:
            if self.family == "encoder_self":
                query = min(self.enc_query, n_source - 1)
            elif n_steps:
                query = n_steps - 1
            else:
                return None
            return Cell(self.family, row // self.dims.h, row % self.dims.h, query, col)
        if self.family != "encoder_self" and row >= n_steps:
            return None  # a cursor from before a step back; the redraw brings a fresh one
        return Cell(self.family, self.layer, self.head, row, col)

    def candidates(self, step: StepTrace, tokenizer: Tokenizer | None) -> list[Candidate]:
        """The step's top-k under this view's temperature (the step itself keeps the model's).
        Without a tokenizer (a replayed trace) the stored candidates are the pieces there are names
        for; a temperature keeps the logits' order, so re-scoring them from the logits is exact."""
        if step.logits is None:
            return step.candidates[: self.top_k]
        if tokenizer is None:
            probs = (step.logits.float() / self.temperature).softmax(-1)  # (vocab,)
            return [replace(c, prob=float(probs[c.token])) for c in step.candidates[: self.top_k]]
        return top_candidates(step.logits, tokenizer, self.top_k, self.temperature)
