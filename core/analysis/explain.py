"""Eq. 1 written out for one query and one head of the live model: the worked example of the notes.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

The course notes (../shared/seeds, "The cat sat") compute it by hand: the dot products q·k, the
division by √d_k, the softmax, the weighted sum of the values. `explain` does the same with the
model's own weights: it re-runs the stack up to the chosen layer to get that layer's input, projects
it with the layer's W^Q and W^K/W^V, slices out one head, and returns every intermediate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

from core.errors import TTError
from core.model.masks import padding_mask, subsequent_mask
from core.model.transformer import Transformer

Family = Literal["encoder_self", "decoder_self", "cross"]
FAMILIES: tuple[Family, ...] = ("cross", "decoder_self", "encoder_self")


@dataclass
class Explanation:
    """Every intermediate of one head's attention for one query; vectors are per key (T_k,)."""

    query: torch.Tensor  # (d_k,) q = x W^Q, this head's slice
    keys: torch.Tensor  # (T_k, d_k)
    values: torch.Tensor  # (T_k, d_k)
    scores: torch.Tensor  # (T_k,) q·k, before scaling
    d_k: int
    scaled: torch.Tensor  # (T_k,) q·k / √d_k
    mask: torch.Tensor  # (T_k,) bool, True where the query may attend
    masked: torch.Tensor  # (T_k,) scaled, with -inf where the mask forbids
    weights: torch.Tensor  # (T_k,) softmax(masked)
    output: torch.Tensor  # (d_k,) Σ weights · values, this head's slice of the output before W^O
    family: str = ""
    layer: int = 0
    head: int = 0
    query_index: int = 0
    query_piece: str = ""
    key_pieces: list[str] | None = None


def attention_steps(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> Explanation:
    """Eq. 1 for one query vector q (d_k,) against keys k (T_k, d_k) and values v (T_k, d_v)."""
    d_k = q.size(-1)
    scores = k @ q  # (T_k,)
    scaled = scores / math.sqrt(d_k)
    allowed = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.to(torch.bool)
    masked = scaled.masked_fill(~allowed, float("-inf"))
    # Everything masked would give NaN; the model gives such a query zero attention (core.model.attention).
    weights = torch.nan_to_num(masked.softmax(-1), nan=0.0)
    return Explanation(q, k, v, scores, d_k, scaled, allowed, masked, weights, weights @ v)


def _head(x: torch.Tensor, head: int, d_k: int) -> torch.Tensor:
    return x[..., head * d_k : (head + 1) * d_k]  # (T, d_k): one head's columns of a projection


@torch.inference_mode()
def explain(
    model: Transformer,
    src: list[int],
    tgt_in: list[int],
    *,
    family: Family,
    layer: int,
    head: int,
    query: int,
    src_pieces: list[str] | None = None,
    tgt_pieces: list[str] | None = None,
) -> Explanation:
    """Eq. 1 for `query` (a source position for encoder_self, else a target position) of one head.

    src: the encoder's input ids (EOS last); tgt_in: the decoder's inputs (BOS first). The layer's
    input is recomputed from scratch by running the stack below it, in eval mode, as decoding does.
    """
    cfg = model.cfg
    n_layers = cfg.n_encoder_layers if family == "encoder_self" else cfg.n_decoder_layers
    if family not in FAMILIES:
        raise TTError(f"unknown attention family {family!r}; choose one of {', '.join(FAMILIES)}")
    if not 0 <= layer < n_layers:
        raise TTError(f"layer {layer} does not exist; this model has {n_layers}")
    if not 0 <= head < cfg.h:
        raise TTError(f"head {head} does not exist; this model has {cfg.h}")
    n_queries = len(src) if family == "encoder_self" else len(tgt_in)
    if not 0 <= query < n_queries:
        raise TTError(f"query position {query} is outside 0..{n_queries - 1}")
    device = next(model.parameters()).device
    src_t = torch.tensor([src], device=device)  # (1, S)
    src_mask = padding_mask(src_t, cfg.pad_id)  # (1, 1, 1, S)
    d_k = cfg.d_k

    if family == "encoder_self":
        x = model.src_pos(model.src_embed(src_t))  # (1, S, d_model)
        for below in model.encoder_layers[:layer]:
            x, _ = below(x, src_mask)
        block = model.encoder_layers[layer]
        y = block.self_attn_norm.sublayer_input(x)[0]  # (S, d_model)
        attn, kv_input, mask = block.self_attn, y, src_mask[0, 0, 0]  # mask (S,)
        pieces_q, pieces_k = src_pieces, src_pieces
    else:
        memory = model.encode(src_t).memory  # (1, S, d_model)
        tgt_t = torch.tensor([tgt_in], device=device)  # (1, T)
        x = model.tgt_pos(model.tgt_embed(tgt_t))  # (1, T, d_model)
        for below in model.decoder_layers[:layer]:
            x, _, _ = below(x, memory, src_mask, None)
        block = model.decoder_layers[layer]
        y = block.self_attn_norm.sublayer_input(x)
        if family == "decoder_self":
            attn, kv_input = block.self_attn, y[0]  # (T, d_model)
            mask = subsequent_mask(len(tgt_in), device=device)[0, 0, query]  # (T,): no looking ahead
            pieces_k = tgt_pieces
        else:
            attended, _ = block.self_attn(y, is_causal=True)
            x = block.self_attn_norm(x, attended)
            y = block.cross_attn_norm.sublayer_input(x)
            attn, kv_input, mask = block.cross_attn, memory[0], src_mask[0, 0, 0]  # (S, d_model), (S,)
            pieces_k = src_pieces
        y = y[0]  # (T, d_model)
        pieces_q = tgt_pieces

    q = _head(attn.w_q(y[query]), head, d_k)  # (d_k,)
    k_all, v_all = attn.w_kv(kv_input).chunk(2, dim=-1)  # 2 × (T_k, d_model)
    out = attention_steps(q, _head(k_all, head, d_k), _head(v_all, head, d_k), mask)
    out.family, out.layer, out.head, out.query_index = family, layer, head, query
    out.query_piece = pieces_q[query] if pieces_q else str(query)
    out.key_pieces = pieces_k
    return out
