"""A trained model made larger without changing what it computes (function-preserving growth, Net2Net).

    tt train --init-from weights/next --d-ff 2048 …   # the FFN of every layer twice as wide
    tt train --init-from weights --encoder-layers 5 …  # two encoder layers more on top of the stack

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


def _to_grow(state: dict[str, torch.Tensor], size: int, wanted: int, refusal: str) -> dict[str, torch.Tensor] | None:
    """A copy of `state` to grow from `size` to `wanted`; None when they are equal. ValueError(refusal) to shrink."""
    if wanted < size:
        raise ValueError(refusal)
    return dict(state) if wanted > size else None


def widen_ffn(
    state: dict[str, torch.Tensor], cfg: ModelConfig, d_ff: int, *, seed: int = 0, draw: bool = True
) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """The config and weights of `cfg`'s model with every FFN `d_ff` wide; `state` is not changed.

    New rows of W1 are Xavier-uniform for the wider matrix (a generator seeded with `seed`), or zero with
    draw=False (units that are simply absent: what averaging with a wider model needs); new entries of b1 and the
    new columns of W2 are zero. Raises ValueError when `d_ff` is narrower than the model's."""
    grown = _to_grow(
        state, cfg.d_ff, d_ff, f"--d-ff {d_ff} would narrow the model's FFN ({cfg.d_ff}); it can only grow"
    )
    if grown is None:
        return cfg, dict(state)
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


def deepen_encoder(
    state: dict[str, torch.Tensor], cfg: ModelConfig, n_layers: int, *, seed: int = 0, draw: bool = True
) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """The config and weights of `cfg`'s model with `n_layers` encoder layers, the new ones on top of the stack;
    `state` is not changed.

    A post-norm layer ends in LayerNorm(x + FFN(x)) with its gain γ and bias β. The top layer's γ and β move to
    the new top layer and every norm below it in the new layers is the plain one (γ = 1, β = 0); the new layers'
    attention output projection and W2 (weights and biases) start at zero. So the old top layer hands on the
    normalised vector n, each new sublayer adds nothing and LayerNorm(n) = n, and the last norm puts γ·n + β back:
    the deeper model's outputs are the trained model's (to float rounding; LayerNorm's ε). The new layers' Q, K, V
    and W1 are Xavier-uniform as a fresh model's (a generator seeded with `seed`), or zero with draw=False (the
    layers a shallower model does not have, for averaging with a deeper one). Pre-norm stacks end in their own
    norm, so there the new layers simply add nothing. Raises ValueError when `n_layers` is fewer than the model's.
    """
    refusal = f"--encoder-layers {n_layers} would remove layers ({cfg.n_encoder_layers}); the encoder can only grow"
    grown = _to_grow(state, cfg.n_encoder_layers, n_layers, refusal)
    if grown is None:
        return cfg, dict(state)
    gen = torch.Generator().manual_seed(seed)
    top, prefix = cfg.n_encoder_layers - 1, "encoder_layers."
    template = {k.split(".", 2)[2]: v for k, v in state.items() if k.startswith(f"{prefix}{top}.")}
    for i in range(cfg.n_encoder_layers, n_layers):
        for name, tensor in template.items():
            if name.endswith("norm.weight"):
                new = torch.ones_like(tensor)
            elif draw and name.endswith("weight") and not name.startswith(("self_attn.w_o", "ffn.w_2")):
                bound = math.sqrt(6.0 / sum(tensor.shape))  # nn.init.xavier_uniform_
                new = ((torch.rand(tensor.shape, generator=gen) * 2 - 1) * bound).to(tensor.dtype)
            else:  # biases, the output projection and W2: zero
                new = torch.zeros_like(tensor)
            grown[f"{prefix}{i}.{name}"] = new
    if cfg.norm == "post":
        norm = f"{prefix}{top}.ffn_norm.norm"
        for part, plain in (("weight", torch.ones_like), ("bias", torch.zeros_like)):
            grown[f"{prefix}{n_layers - 1}.ffn_norm.norm.{part}"] = state[f"{norm}.{part}"]
            grown[f"{norm}.{part}"] = plain(state[f"{norm}.{part}"])
    return replace(cfg, n_encoder_layers=n_layers), grown


def grow_vocab(
    state: dict[str, torch.Tensor], cfg: ModelConfig, vocab_size: int, *, seed: int = 0
) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """The config and weights of `cfg`'s model with a vocabulary of `vocab_size`: the pieces a tokenizer appended
    (core.data.tokenizer.Tokenizer.with_pieces) get new rows; `state` is not changed.

    Each new row of an embedding table and of the output projection is that matrix's mean row plus noise at a
    tenth of its spread: the mean keeps a new piece's logit near the average, so the model's outputs barely move
    (one more term of average size in a softmax over thousands), and the noise lets the new pieces tell each
    other apart. Tied matrices (share_embeddings, §3.4) get the same rows. Every old id keeps its row. Raises
    ValueError when `vocab_size` is smaller than the model's."""
    refusal = f"the vocabulary has {vocab_size} pieces, fewer than the model's {cfg.vocab_size}"
    grown = _to_grow(state, cfg.vocab_size, vocab_size, refusal)
    if grown is None:
        return cfg, dict(state)
    gen = torch.Generator().manual_seed(seed)
    rows: dict[int, torch.Tensor] = {}  # by storage: tied matrices share one set of new rows
    for name, tensor in state.items():
        if not (name.endswith("embed.table.weight") or name == "generator.weight"):
            continue
        if tensor.data_ptr() not in rows:  # (vocab, d_model)
            table = tensor.float()
            noise = torch.randn(vocab_size - cfg.vocab_size, table.size(1), generator=gen) * table.std() * 0.1
            rows[tensor.data_ptr()] = (table.mean(0, keepdim=True) + noise).to(tensor.dtype)
        grown[name] = torch.cat([tensor, rows[tensor.data_ptr()]])  # (vocab_size, d_model)
    return replace(cfg, vocab_size=vocab_size), grown


def narrow_ffn(
    state: dict[str, torch.Tensor], cfg: ModelConfig, d_ff: int
) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """The config and weights of `cfg`'s model with every FFN cut to its first `d_ff` units; `state` is not changed.

    The inverse of `widen_ffn`: the units it added (the last ones) are dropped, the trained ones kept as they are.
    Not function-preserving once the added units have trained: what they learned goes (a model soup averaged at
    the narrower shipped width keeps only what the wider run learned in the shared units, docs/model.md). Raises
    ValueError when `d_ff` is wider than the model's."""
    if d_ff > cfg.d_ff:
        raise ValueError(f"cutting the FFN to {d_ff} units would widen it ({cfg.d_ff}); widen_ffn grows it")
    cut = dict(state)
    for name, tensor in state.items():
        if name.endswith(("ffn.w_1.weight", "ffn.w_1.bias")):  # (d_ff, d_model), (d_ff,)
            cut[name] = tensor[:d_ff].contiguous()
        elif name.endswith("ffn.w_2.weight"):  # (d_model, d_ff)
            cut[name] = tensor[:, :d_ff].contiguous()
    return replace(cfg, d_ff=d_ff), cut
