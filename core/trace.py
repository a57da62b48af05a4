"""What one decoding step saw: small dataclasses returned only when asked.

`tt translate --json`, the attention heatmap and `tt inspect` all read these same objects.
Attention tensors are for one sentence (no batch dimension) and live on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Candidate:
    token: int
    piece: str
    prob: float  # under the step's temperature
    logprob: float  # log p under the model itself (temperature 1)


@dataclass
class SourceTrace:
    text: str
    tokens: list[int]  # piece ids fed to the encoder, EOS last
    pieces: list[str]
    encoder_self: list[torch.Tensor] = field(default_factory=list)  # per layer (h, S, S)


@dataclass
class StepTrace:
    index: int  # output position t (0 = the first piece after BOS)
    token: int  # the piece chosen at this step
    piece: str
    logprob: float  # log p(token | source, output so far) under the model
    candidates: list[Candidate]  # the top-k of the distribution, most probable first
    forced: bool = False  # chosen by the caller (what-if), not by the decoding rule
    decoder_self: list[torch.Tensor] = field(default_factory=list)  # per layer (h, t+1): masked self-attention
    cross: list[torch.Tensor] = field(default_factory=list)  # per layer (h, S): attention over the source
    logits: torch.Tensor | None = None  # (vocab,) raw scores, so a view can re-shape the distribution
