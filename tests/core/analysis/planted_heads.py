"""One decoded sentence whose every self-attention head has a planted, known kind.

A 3 + 1-layer model's trace with two heads per layer, each head a one-hot (or uniform) pattern:
no two encoder heads share a kind, and the decoder's differ from the encoder's first layer, so a
view that draws the kinds shuffled, or from the wrong layer or family, shows something else.
Shared by the core test of `sentence_kinds` and the `tt inspect` tests that replay it as a trace.
"""

from __future__ import annotations

import torch

from core.decode.trace import Candidate, SourceTrace, StepTrace
from core.model.attention import Head
from core.model.config import EOS_ID

# "▁ch at" and "▁dor t" are two-piece words (for "same word"); no punctuation, so only the first
# piece and </s> are parking keys. Seven pieces: "long range" (4 apart) can still beat uniform 3×.
SOURCE_PIECES = ["\u2581Le", "\u2581ch", "at", "\u2581dor", "t", "\u2581bien", "</s>"]
SOURCE_TOKENS = [10, 11, 12, 13, 14, 15, EOS_ID]
OUTPUT_PIECES = ["\u2581The", "\u2581cat", "\u2581sle", "eps", "\u2581well", "</s>"]
OUTPUT_TOKENS = [20, 21, 22, 23, 24, EOS_ID]
TEXT, TRANSLATION = "Le chat dort bien", "The cat sleeps well"

PLANTED = {
    Head("encoder_self", 0, 0): "previous",
    Head("encoder_self", 0, 1): "next",
    Head("encoder_self", 1, 0): "diagonal",
    Head("encoder_self", 1, 1): "long range",
    Head("encoder_self", 2, 0): "same word",
    Head("encoder_self", 2, 1): "parked",
    Head("decoder_self", 0, 0): "previous",
    Head("decoder_self", 0, 1): "mixed",
}


def one_hot(keys: list[int]) -> torch.Tensor:
    """(T, T): row i puts all its weight on key keys[i]."""
    w = torch.zeros(len(keys), len(keys))
    w[range(len(keys)), keys] = 1.0
    return w


def encoder_heads() -> list[torch.Tensor]:
    """Per layer (h = 2, S, S), the heads of PLANTED in order."""
    s = len(SOURCE_PIECES)
    previous = one_hot([max(i - 1, 0) for i in range(s)])
    following = one_hot([min(i + 1, s - 1) for i in range(s)])
    itself = one_hot(list(range(s)))
    far = one_hot([i + 4 if i + 4 < s else i - 4 if i >= 4 else i for i in range(s)])  # 3 has none: itself
    same_word = one_hot([0, 2, 1, 4, 3, 5, 6])  # ▁ch ↔ at, ▁dor ↔ t; the rest on itself
    parked = one_hot([s - 1] * s)  # all on </s>
    return [torch.stack(pair) for pair in ((previous, following), (itself, far), (same_word, parked))]


def decoder_rows(t: int) -> list[torch.Tensor]:
    """Step t's masked self-attention, one layer of h = 2: (previous, uniform) over its t + 1 inputs."""
    previous = torch.zeros(t + 1)
    previous[max(t - 1, 0)] = 1.0
    return [torch.stack([previous, torch.full((t + 1,), 1 / (t + 1))])]


def planted_trace() -> tuple[SourceTrace, list[StepTrace]]:
    source = SourceTrace(TEXT, list(SOURCE_TOKENS), list(SOURCE_PIECES), encoder_heads())
    s = len(SOURCE_PIECES)
    steps = [
        StepTrace(
            index=t,
            token=token,
            piece=piece,
            logprob=-0.1,
            candidates=[Candidate(token, piece, 0.9, -0.1)],
            decoder_self=decoder_rows(t),
            cross=[torch.full((2, s), 1 / s)],
        )
        for t, (token, piece) in enumerate(zip(OUTPUT_TOKENS, OUTPUT_PIECES))
    ]
    return source, steps
