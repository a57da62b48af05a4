"""Eq. 1 written out for one query and one head of the live model: the worked example of the notes.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

The course notes (../shared/seeds, "The cat sat") compute it by hand: the dot products q·k, the
division by √d_k, the softmax, the weighted sum of the values. `explain` shows the same steps with
the model's own numbers: one forward pass with need_weights=True returns every attention
sub-layer's internals (q, k, v, the pre-softmax scores, the weights, each head's output), and
this picks one head and one query out of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.errors import TTError
from core.model.attention import FAMILIES, AttentionInternals, Family, n_layers_of
from core.model.transformer import Transformer

__all__ = ["FAMILIES", "Explanation", "Family", "explain"]


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

    src: the encoder's input ids (EOS last); tgt_in: the decoder's inputs (BOS first). One
    teacher-forced pass in eval mode, as decoding runs; every number comes out of that pass.
    """
    cfg = model.cfg
    if family not in FAMILIES:
        raise TTError(f"unknown attention family {family!r}; choose one of {', '.join(FAMILIES)}")
    n_layers = n_layers_of(cfg, family)
    if not 0 <= layer < n_layers:
        raise TTError(f"layer {layer} does not exist; this model has {n_layers}")
    if not 0 <= head < cfg.h:
        raise TTError(f"head {head} does not exist; this model has {cfg.h}")
    n_queries = len(src) if family == "encoder_self" else len(tgt_in)
    if not 0 <= query < n_queries:
        raise TTError(f"query position {query} is outside 0..{n_queries - 1}")
    device = next(model.parameters()).device
    enc = model.encode(torch.tensor([src], device=device), need_weights=True)  # (1, S)
    if family == "encoder_self":
        internals: AttentionInternals = enc.attention[layer]
        pieces_q = pieces_k = src_pieces
    else:
        dec = model.decode(torch.tensor([tgt_in], device=device), enc, need_weights=True)  # (1, T)
        internals = (dec.self_attention if family == "decoder_self" else dec.cross_attention)[layer]
        pieces_q, pieces_k = tgt_pieces, (tgt_pieces if family == "decoder_self" else src_pieces)

    q = internals.q[0, head, query].float()  # (d_k,)
    k, v = internals.k[0, head].float(), internals.v[0, head].float()  # (T_k, d_k)
    masked = internals.scores[0, head, query].float()  # (T_k,) what the softmax read
    dots = k @ q  # (T_k,) shown for every key, the masked ones too
    return Explanation(
        query=q,
        keys=k,
        values=v,
        scores=dots,
        d_k=cfg.d_k,
        scaled=dots / math.sqrt(cfg.d_k),
        mask=masked > float("-inf"),
        masked=masked,
        weights=internals.weights[0, head, query].float(),
        output=internals.heads[0, head, query].float(),
        family=family,
        layer=layer,
        head=head,
        query_index=query,
        query_piece=pieces_q[query] if pieces_q else str(query),
        key_pieces=pieces_k,
    )
