"""What the insides screen draws, computed once per sentence on the model thread (never in the UI).

Everything comes from core.analysis: the encoder walked sub-layer by sub-layer, the heads' pattern
kinds and saturation on this sentence and its translation, the parameter breakdown, the position
table. The contextual comparison needs a second sentence, asked for on the screen and added later.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from core.align.links import words
from core.analysis.internals import (
    EncoderWalk,
    ParameterBreakdown,
    PositionDots,
    WordContext,
    contextual_similarity,
    parameter_breakdown,
    position_dots,
    position_table,
    source_walk,
)
from core.analysis.patterns import Patterns, head_patterns

PE_POSITIONS = 64  # rows of the position table the dot products read (capped by max_len)


@dataclass(frozen=True, eq=False)  # tensors inside: no field-wise ==
class Internals:
    text: str
    translation: str
    walk: EncoderWalk
    patterns: Patterns
    parameters: ParameterBreakdown
    positions: torch.Tensor  # (min(PE_POSITIONS, max_len), d_model)
    dots: PositionDots
    positional: str  # sinusoidal or learned
    d_ff: int
    context: WordContext | None = None  # the selected word against a second sentence, once typed


def gather(loaded, text: str, translation: str) -> Internals:
    walk = source_walk(loaded, text)
    table = position_table(loaded.model, min(PE_POSITIONS, loaded.cfg.max_len))
    return Internals(
        text,
        translation,
        walk,
        head_patterns(loaded, [(text, translation or text)]),
        parameter_breakdown(loaded.model),
        table,
        position_dots(table, starts=tuple(p for p in (0, 3, 10, 25, 50) if p < table.size(0))),
        loaded.cfg.positional,
        loaded.cfg.d_ff,
    )


def with_context(loaded, data: Internals, word: str, second: str) -> Internals:
    """`data` with `word` compared, level by level, against the same word in `second`."""
    return replace(data, context=contextual_similarity(loaded, word, data.text, second))


def word_at(pieces: list[str], position: int) -> str:
    """The whole word the piece at `position` belongs to (pieces joined, the word-start mark dropped)."""
    for group in words(pieces):
        if position in group:
            return "".join(pieces[i] for i in group).replace("\u2581", "")
    return pieces[position].replace("\u2581", "")
