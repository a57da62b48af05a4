"""Scaled dot-product and multi-head attention (§3.2), with a key/value cache for decoding.

Two paths, one contract: the fused `F.scaled_dot_product_attention` for speed, and a manual path
that also returns the internals of Eq. 1 (`AttentionInternals`) when the caller asks for them
(`need_weights=True`). Interventions are arguments, never hooks: a `head_mask` zeroes chosen heads'
outputs before W^O in both paths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from core.errors import ConfigError
from core.model.masks import subsequent_mask

if TYPE_CHECKING:
    from core.model.config import ModelConfig

Family = Literal["encoder_self", "decoder_self", "cross"]
FAMILIES: tuple[Family, ...] = (
    "encoder_self",
    "decoder_self",
    "cross",
)  # model order: the encoder's, then the decoder's


class Head(NamedTuple):
    """One attention head of the model: its family, layer and index within the layer (0-based).
    A tuple, so it sorts, hashes and unpacks as (family, layer, head)."""

    family: Family
    layer: int
    head: int

    def __str__(self) -> str:
        return f"{self.family} {layer_head(self.layer, self.head)}"

    @classmethod
    def named(cls, name: str) -> Head:
        """The head `str` names: "cross L3H2" → Head("cross", 2, 1)."""
        family, at = name.split()
        layer, head = at[1:].split("H")
        return cls(family, int(layer) - 1, int(head) - 1)  # type: ignore[arg-type]

    def shown(self) -> dict:
        """The head as tt's JSON gives it: layer and head counted from 1, and its name ("cross L3H2")."""
        return {"family": self.family, "layer": self.layer + 1, "head": self.head + 1, "name": str(self)}


# One numbering for people: layers and heads count from 1 wherever tt prints them or takes them as an
# option (text, JSON, the TUI, the card), so a head one command names is found by that name in the others.
# Code keeps 0-based indices; these three functions are the only crossing between the two.
def layer_head(layer: int, head: int | None = None) -> str:
    """ "L3H2" for layer index 2, head index 1 ("L3" without a head)."""
    return f"L{layer + 1}" + ("" if head is None else f"H{head + 1}")


def layer_number(layer: int, n_layers: int) -> int:
    """The 1-based number of a layer index, negative indices (from the last) included."""
    return layer % n_layers + 1


def layer_index(number: int, n_layers: int, what: str = "layer") -> int:
    """The 0-based index of a layer a person named: 1..n_layers, or -1 (the last), -2 … counting back."""
    if not (1 <= number <= n_layers or -n_layers <= number <= -1):
        raise ConfigError(
            f"{what} {number}: this model has {n_layers} layers, counted from 1 (1..{n_layers}, or -1 for the last)"
        )
    return number - 1 if number > 0 else number % n_layers


def head_index(number: int, h: int, what: str = "head") -> int:
    """The 0-based index of a head a person named: 1..h."""
    if not 1 <= number <= h:
        raise ConfigError(f"{what} {number}: this model has {h} heads, counted from 1 (1..{h})")
    return number - 1


def n_layers_of(cfg: ModelConfig, family: Family) -> int:  # or anything with its two layer counts
    """How many layers have attention of `family`: the encoder's for encoder_self, else the decoder's."""
    return cfg.n_encoder_layers if family == "encoder_self" else cfg.n_decoder_layers


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V  (Eq. 1), written out step by step.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v); mask broadcasts to (..., T_q, T_k),
    True where attending is allowed. Returns (output (..., T_q, d_v), weights (..., T_q, T_k),
    scores (..., T_q, T_k)): the scores are what the softmax read, Q Kᵀ / √d_k with -inf where masked.
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    # A query whose every key is masked would give NaN; give it zero attention instead.
    weights = torch.nan_to_num(weights, nan=0.0)
    attended = dropout(weights) if dropout is not None else weights
    return attended @ v, weights, scores  # (..., T_q, d_v), (..., T_q, T_k), (..., T_q, T_k)


@dataclass
class AttentionInternals:
    """Eq. 1 of one attention sub-layer, every head, as the forward pass computed it.

    Returned only when asked (`need_weights=True`), never stashed on the module. With a KV cache,
    `k`/`v` are the cache's tensors: copy them before decoding on if you keep them.
    """

    q: torch.Tensor  # (B, h, T_q, d_k) the queries, Q W^Q split into heads
    k: torch.Tensor  # (B, h, T_k, d_k)
    v: torch.Tensor  # (B, h, T_k, d_k)
    scores: torch.Tensor  # (B, h, T_q, T_k) pre-softmax: Q Kᵀ / √d_k, -inf where the mask forbids
    weights: torch.Tensor  # (B, h, T_q, T_k) softmax(scores); a query with no visible key gets 0s
    heads: torch.Tensor  # (B, h, T_q, d_k) weights · V per head, head mask applied: what W^O mixes


@dataclass(frozen=True)
class HeadMask:
    """Which heads speak: per family, a (n_layers, h) tensor, 1 = keep, 0 = zero that head's output.

    The mask multiplies each head's output before Concat · W^O (§3.2.2), so 0 removes the head's
    contribution entirely and a value in between scales it. A leading batch dimension,
    (B, n_layers, h), gives each row of a teacher-forced batch its own mask.

        mask = HeadMask.ones(cfg).off("cross", layer=1, head=3)
        model.decode(tgt, model.encode(src, head_mask=mask), head_mask=mask)
    """

    encoder_self: torch.Tensor  # (n_encoder_layers, h)
    decoder_self: torch.Tensor  # (n_decoder_layers, h)
    cross: torch.Tensor  # (n_decoder_layers, h)

    @classmethod
    def ones(cls, cfg: ModelConfig) -> HeadMask:
        """Every head on: the model as trained."""
        return cls(
            torch.ones(cfg.n_encoder_layers, cfg.h),
            torch.ones(cfg.n_decoder_layers, cfg.h),
            torch.ones(cfg.n_decoder_layers, cfg.h),
        )

    def off(self, family: Family, layer: int, head: int) -> HeadMask:
        """A copy with one head switched off (in every row, when batched)."""
        return self.scaled(family, layer, head, 0.0)

    def scaled(self, family: Family, layer: int, head: int, value: float) -> HeadMask:
        """A copy with one head's output multiplied by `value` (1 = as trained, 0 = off)."""
        if family not in FAMILIES:
            raise ValueError(f"unknown attention family {family!r}; choose one of {', '.join(FAMILIES)}")
        table = getattr(self, family).clone()
        table[..., layer, head] = value
        return replace(self, **{family: table})

    def layer(self, family: Family, i: int) -> torch.Tensor:
        """Layer i's mask for `family`: (h,), or (B, h) when batched."""
        return getattr(self, family)[..., i, :]


class KVCache:
    """Keys and values of one attention sub-layer, kept between decoding steps.

    Self-attention caches grow by one position a step. They live in a preallocated buffer
    (`reserve`, or doubling when it runs out) that each step writes into in place, so a step costs
    one position, not a copy of the whole cache (what torch.cat would do). Keys and values share one
    (2, B, h, capacity, d_k) allocation, so a step writes both in one copy (`append_pair`).
    Cross-attention caches hold the projected encoder memory, computed once per sentence. `k` and
    `v` are views of the filled positions; assigning them (the stepper's undo trims them) replaces
    the buffer.
    """

    def __init__(self, k: torch.Tensor, v: torch.Tensor, length: int | None = None, pair: torch.Tensor | None = None):
        self._k, self._v = k, v  # (B, h, capacity, d_k), positions [0, length) filled
        self._pair = pair  # (2, B, h, capacity, d_k) whose halves are k and v, when they are one allocation
        self.length = k.size(2) if length is None else length  # None: all of k and v are filled
        self._flat: tuple | None = None  # flat_heads' views of the whole buffers, and the buffers

    @classmethod
    def empty(cls, pair: torch.Tensor) -> KVCache:
        """An empty cache over a (2, B, h, capacity, d_k) buffer."""
        return cls(pair[0], pair[1], length=0, pair=pair)

    @property
    def k(self) -> torch.Tensor:
        return self._k.narrow(2, 0, self.length)  # (B, h, T, d_k); narrow: one cheap op per step

    @k.setter
    def k(self, value: torch.Tensor) -> None:
        self._k, self._pair, self.length = value, None, value.size(2)

    @property
    def v(self) -> torch.Tensor:
        return self._v.narrow(2, 0, self.length)

    @v.setter
    def v(self, value: torch.Tensor) -> None:
        self._v, self._pair, self.length = value, None, value.size(2)

    def flat_heads(self) -> tuple[torch.Tensor, torch.Tensor]:
        """k and v as (B·h, T, d_k) views (what one query's attention reads): of the whole buffers,
        kept until they change, sliced to the filled positions."""
        memo = self._flat
        if memo is None or memo[0] is not self._k or memo[1] is not self._v:
            if not (self._k.is_contiguous() and self._v.is_contiguous()):  # a reshape would copy
                b, h, t, d_k = self._k.size(0), self._k.size(1), self.length, self._k.size(3)
                return self.k.reshape(b * h, t, d_k), self.v.reshape(b * h, t, d_k)
            b, h, capacity, d_k = self._k.shape
            memo = self._flat = (
                self._k,
                self._v,
                self._k.view(b * h, capacity, d_k),
                self._v.view(b * h, capacity, d_k),
            )
        k, v = memo[2], memo[3]
        return (k, v) if self.length == k.size(1) else (k[:, : self.length], v[:, : self.length])

    @property
    def capacity(self) -> int:
        return self._k.size(2)

    def reserve(self, capacity: int) -> None:
        """Make room for `capacity` positions in all, so appends up to it copy nothing old."""
        if capacity > self.capacity:
            b, h, _, d_k = self._k.shape
            pair = self._k.new_empty(2, b, h, capacity, d_k)
            pair[0, :, :, : self.length], pair[1, :, :, : self.length] = self.k, self.v
            self._k, self._v, self._pair = pair[0], pair[1], pair

    def append(self, k: torch.Tensor, v: torch.Tensor) -> None:
        t = k.size(2)
        if self.length + t > self.capacity:
            self.reserve(max(2 * self.capacity, self.length + t, 16))  # amortised O(1) per position
        self._k.narrow(2, self.length, t).copy_(k)  # (B, h, t, d_k) into place
        self._v.narrow(2, self.length, t).copy_(v)
        self.length += t

    def append_pair(self, kv: torch.Tensor) -> None:
        """One new position: kv (2, B, h, d_k), keys then values; one copy when they share a buffer."""
        if self._pair is None or self.length == self.capacity:
            self.append(kv[0].unsqueeze(2), kv[1].unsqueeze(2))
            return
        self._pair.select(3, self.length).copy_(kv)
        self.length += 1

    def append_slots(self, kv: torch.Tensor, k: int) -> None:
        """One step of beam slots (`BeamSlots`): kv (2, S, g, h, d_k), the keys then values of each of
        S sentences' g beams, into the next k positions; the k − g spare ones (the first step's, before
        the beams fan out) are zeroed, so the attention never multiplies a masked slot's garbage."""
        g = kv.size(2)
        if self._pair is None or self.length + k > self.capacity:
            self.reserve(max(2 * self.capacity, self.length + k))
        slots = self._pair.narrow(3, self.length, k)  # (2, S, h, k, d_k)
        slots.narrow(3, 0, g).copy_(kv.transpose(2, 3))
        if g < k:
            slots.narrow(3, g, k - g).zero_()
        self.length += k

    def move_rows(self, dst: torch.Tensor, src: torch.Tensor, n: int) -> None:
        """Keep the first `n` batch rows, after rows `src` (all at `n` or past it) are written over rows `dst` (all
        before it): a batch that drops its finished rows moves only the live rows past the survivors' count into the
        finished rows' places, where `select` would copy every row that stays (bench/README.md)."""
        if dst.numel():
            if self._pair is not None:  # keys and values in one allocation: one move of their filled positions
                filled = self._pair.narrow(3, 0, self.length)  # (2, B, h, T, d_k)
                filled[:, dst] = filled[:, src]
            else:
                k, v = self.k, self.v
                k[dst], v[dst] = k[src], v[src]
        self._k, self._v = self._k[:n], self._v[:n]
        self._pair = None if self._pair is None else self._pair[:, :n]

    def select(self, index: torch.Tensor) -> None:
        """Keep batch rows `index` (beam search reorders and prunes hypotheses).

        Only the filled positions move. When no more rows come out than went in, they are written
        back into the same buffer (its first rows), so the capacity is kept without a new allocation.
        """
        k, v = self.k.index_select(0, index), self.v.index_select(0, index)  # (n, h, T, d_k)
        n = index.numel()
        if self.capacity == self.length:
            self._k, self._v, self._pair = k, v, None  # nothing reserved (cross-attention): the selection is the cache
            return
        if n > self._k.size(0):  # more rows (the beams of each sentence fan out): a new buffer
            b, h, capacity, d_k = self._k.shape
            self._pair = k.new_empty(2, n, h, capacity, d_k)
            self._k, self._v = self._pair[0], self._pair[1]
        else:  # a prefix of rows stays contiguous
            self._k, self._v = self._k[:n], self._v[:n]
            self._pair = None if self._pair is None else self._pair[:, :n]
        self._k[:, :, : self.length], self._v[:, :, : self.length] = k, v


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    W^K and W^V are stored stacked in one (2·d_model × d_model) projection: one matmul for both,
    and the cross-attention keys/values of the encoder memory are projected once per sentence.
    """

    def __init__(self, d_model: int, h: int, attention_dropout: float = 0.0) -> None:
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.w_q = nn.Linear(d_model, d_model)
        self.w_kv = nn.Linear(d_model, 2 * d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attention_dropout = attention_dropout
        self.dropout = nn.Dropout(attention_dropout)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.d_k).transpose(1, 2)  # (B, h, T, d_k)

    def project_kv(self, memory: torch.Tensor) -> KVCache:
        k, v = self.w_kv(memory).chunk(2, dim=-1)  # 2 × (B, T_k, d_model)
        return KVCache(self.split_heads(k), self.split_heads(v))

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        cache: KVCache | None = None,
        static_kv: bool = False,
        is_causal: bool = False,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, AttentionInternals | None]:
        """x (B, T_q, d_model) queries; keys/values from `memory` (cross) or from x (self).

        With a `cache`: static_kv=True uses its keys/values as they are (cross-attention);
        otherwise x's new keys/values are appended to it first (incremental self-attention).
        `is_causal` lets the fused path apply the look-ahead mask itself (mask must be None).
        `head_mask` (h,) or (B, h): each head's output is multiplied by it before W^O (1 keeps, 0 removes).
        Returns (output (B, T_q, d_model), the internals of Eq. 1 when need_weights, else None).
        """
        if is_causal and mask is not None:
            # The two paths would disagree (fused drops one of them): fold causality into the mask instead.
            raise ValueError("give either is_causal=True or a mask, not both")
        q = self.split_heads(self.w_q(x))  # (B, h, T_q, d_k)
        if cache is not None and static_kv:
            k, v = cache.k, cache.v
        else:
            kv = self.project_kv(x if memory is None else memory)
            if cache is not None:
                cache.append(kv.k, kv.v)
                kv = cache
            k, v = kv.k, kv.v  # (B, h, T_k, d_k)

        internals = None
        if need_weights:
            if is_causal:
                mask = subsequent_mask(q.size(2), offset=k.size(2) - q.size(2), device=q.device)
            out, weights, scores = scaled_dot_product_attention(q, k, v, mask, self.dropout if self.training else None)
        else:
            out = F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=mask,
                dropout_p=self.attention_dropout if self.training else 0.0,
                is_causal=is_causal and mask is None,
            )  # (B, h, T_q, d_k)
        if head_mask is not None:
            # (h,) -> (h, 1, 1) or (B, h) -> (B, h, 1, 1): one factor per head, broadcast over T_q and d_k.
            out = out * head_mask.to(out.device, out.dtype).reshape(*head_mask.shape[:-1], self.h, 1, 1)
        if need_weights:
            internals = AttentionInternals(q, k, v, scores, weights, out)
        b, _, t, _ = out.shape
        out = out.transpose(1, 2).reshape(b, t, self.h * self.d_k)  # (B, T_q, d_model)
        return self.w_o(out), internals
