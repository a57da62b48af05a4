"""A trained model made larger without changing what it computes (function-preserving growth, Net2Net).

    tt train --init-from weights/next --d-ff 2048 …   # the FFN of every layer twice as wide

The position-wise FFN (Eq. 2) is a sum over its hidden units: FFN(x) = Σ_i max(0, x·w1_i + b1_i) w2_i + b2. Units
added with w2_i = 0 add nothing, so the wider model's outputs are the trained model's (to float rounding); their
w1_i start as a fresh model's would (Xavier), so they answer differently from the old units and, once w2_i moves
off zero, become capacity the model did not have. That is the knob for a model that must learn a new domain
without forgetting the old one (docs/model.md): the continued run trades one for the other at a fixed size.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from core.model.config import ModelConfig


def widen_ffn(
    state: dict[str, torch.Tensor], cfg: ModelConfig, d_ff: int, *, seed: int = 0, draw: bool = True
) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """The config and weights of `cfg`'s model with every FFN `d_ff` wide; `state` is not changed.

    New rows of W1 are Xavier-uniform for the wider matrix (a generator seeded with `seed`), or zero with
    draw=False (units that are simply absent: what averaging with a wider model needs); new entries of b1 and the
    new columns of W2 are zero. Raises ValueError when `d_ff` is narrower than the model's."""
    if d_ff < cfg.d_ff:
        raise ValueError(f"--d-ff {d_ff} would narrow the model's FFN ({cfg.d_ff}); it can only grow")
    grown = dict(state)
    if d_ff == cfg.d_ff:
        return cfg, grown
    gen = torch.Generator().manual_seed(seed)
    extra = d_ff - cfg.d_ff
    bound = math.sqrt(6.0 / (cfg.d_model + d_ff))  # nn.init.xavier_uniform_ for a (d_ff, d_model) weight
    for name, tensor in state.items():
        if name.endswith("ffn.w_1.weight"):  # (d_ff, d_model)
            new = (
                (torch.rand(extra, tensor.size(1), generator=gen) * 2 - 1) * bound
                if draw
                else torch.zeros(extra, tensor.size(1))
            )
            grown[name] = torch.cat([tensor, new.to(tensor.dtype)])
        elif name.endswith("ffn.w_1.bias"):  # (d_ff,)
            grown[name] = torch.cat([tensor, tensor.new_zeros(extra)])
        elif name.endswith("ffn.w_2.weight"):  # (d_model, d_ff)
            grown[name] = torch.cat([tensor, tensor.new_zeros(tensor.size(0), extra)], dim=1)
    return replace(cfg, d_ff=d_ff), grown
