"""The encoder–decoder Transformer of "Attention Is All You Need" (§3, Figure 1).

`encode` reads the source once; `decode` runs the decoder over target tokens, either all at once
(training, teacher forcing) or a few at a time against a `DecoderState` cache (inference).
Internals come back only when asked, nothing is stashed: every attention sub-layer's
`AttentionInternals` with `need_weights=True`, the residual stream after each decoder layer with
`return_layers=True`. A `HeadMask` switches heads off for an experiment (ablation), as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from core.model.attention import AttentionInternals, HeadMask, KVCache, MultiHeadAttention
from core.model.config import ModelConfig
from core.model.layers import AddNorm, Embeddings, FeedForward, PositionalEncoding
from core.model.masks import padding_mask, subsequent_mask


@dataclass
class Encoded:
    """What the encoder hands the decoder: the memory and the source padding mask."""

    memory: torch.Tensor  # (B, S, d_model)
    src_mask: torch.Tensor  # (B, 1, 1, S), True at real source tokens
    attention: list[AttentionInternals] | None = None  # encoder self-attention per layer, when asked

    def select(self, index: torch.Tensor) -> Encoded:
        """Rows `index` of the batch (beam search expands each sentence into its beams)."""
        return Encoded(self.memory.index_select(0, index), self.src_mask.index_select(0, index), None)

    def move_rows(self, dst: torch.Tensor, src: torch.Tensor, n: int) -> Encoded:
        """The first `n` rows after rows `src` are written over rows `dst` (`KVCache.move_rows`), in place."""
        if dst.numel():
            self.memory[dst], self.src_mask[dst] = self.memory[src], self.src_mask[src]
        return Encoded(self.memory[:n], self.src_mask[:n], None)


@dataclass
class BeamSlots:
    """Self-attention caches held once per sentence, for beam search (`FusedStep.start_state(beam=k)`).

    The keys and values that beam j of a sentence adds at step t sit in slot t·k + j of its sentence's
    cache and never move. `ancestry` (rows, slots) is 0 at the slots of each row's own prefix and −inf
    elsewhere: a step reads its row's prefix through it, and choosing the next beams moves these rows
    (`follow`) rather than every layer's keys and values."""

    k: int  # slots a step: the beam size
    ancestry: torch.Tensor  # (rows, capacity·k) additive attention bias

    def follow(self, rows: torch.Tensor) -> None:
        """The live rows become rows `rows` of the previous ones (beam search's chosen parents)."""
        self.ancestry = self.ancestry.index_select(0, rows)


@dataclass
class DecoderState:
    """The key/value cache of every decoder layer; `length` target positions decoded so far.

    `beams` is set when the self-attention caches hold a sentence's beams together (`BeamSlots`);
    then every cache has one row per sentence, and only `beams.ancestry` has one per beam."""

    self_attn: list[KVCache]
    cross_attn: list[KVCache]
    length: int = 0
    beams: BeamSlots | None = None
    # The fused step's cross-attention for a single sentence (core/model/step.py `_absorbed`), made once and
    # kept while the caches it was made from stand: (the step, the first cross cache's keys, the layers' parts).
    absorbed: tuple | None = None
    # The fused step's self-attention caches' one flat allocation (FusedStep.start_state), which
    # FusedStep.release hands on to the next search.
    spare: torch.Tensor | None = None
    # core/model/native's view of this state's caches for the fused step's one-row C step (`FusedStep._native`).
    native: object | None = None

    def move_rows(self, dst: torch.Tensor, src: torch.Tensor, n: int) -> None:
        """Keep the first `n` rows of every cache, rows `src` moved into rows `dst` first (`KVCache.move_rows`)."""
        if self.beams is not None:
            raise ValueError("a state with beam slots keeps sentences: select them with their beams' rows")
        for cache in (*self.self_attn, *self.cross_attn):
            cache.move_rows(dst, src, n)

    def select(self, index: torch.Tensor, rows: torch.Tensor | None = None) -> None:
        """Keep batch rows `index` of every cache. With `beams`, `index` are the sentences that stay and
        `rows` their beams' rows."""
        for cache in (*self.self_attn, *self.cross_attn):
            cache.select(index)
        if self.beams is not None:
            if rows is None:
                raise ValueError("a state with beam slots keeps sentences: name their beams' rows too")
            self.beams.follow(rows)


@dataclass
class Decoded:
    logits: torch.Tensor | None  # (B, T, vocab): unnormalised scores for the next token; None with skip_generator
    self_attention: list[AttentionInternals] | None = None  # per layer; weights (B, h, T, T_so_far)
    cross_attention: list[AttentionInternals] | None = None  # per layer; weights (B, h, T, S)
    # The residual stream after each decoder layer (B, T, d_model), before the final norm and the
    # generator: what a logit lens reads, when return_layers=True.
    layers: list[torch.Tensor] | None = None


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network; each wrapped in Add & Norm (§3.1)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attention_dropout)
        self.self_attn_norm = AddNorm(cfg.d_model, cfg.dropout, cfg.norm)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.ffn_norm = AddNorm(cfg.d_model, cfg.dropout, cfg.norm)

    def forward(
        self,
        x: torch.Tensor,
        *,
        src_mask: torch.Tensor,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, AttentionInternals | None]:
        y = self.self_attn_norm.sublayer_input(x)
        attended, weights = self.self_attn(y, mask=src_mask, need_weights=need_weights, head_mask=head_mask)
        x = self.self_attn_norm(x, attended)
        x = self.ffn_norm(x, self.ffn(self.ffn_norm.sublayer_input(x)))
        return x, weights


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward (§3.1)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attention_dropout)
        self.self_attn_norm = AddNorm(cfg.d_model, cfg.dropout, cfg.norm)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attention_dropout)
        self.cross_attn_norm = AddNorm(cfg.d_model, cfg.dropout, cfg.norm)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.ffn_norm = AddNorm(cfg.d_model, cfg.dropout, cfg.norm)

    def forward(
        self,
        x: torch.Tensor,
        *,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        causal: bool = False,
        self_cache: KVCache | None = None,
        cross_cache: KVCache | None = None,
        need_weights: bool = False,
        self_head_mask: torch.Tensor | None = None,
        cross_head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, AttentionInternals | None, AttentionInternals | None]:
        """`self_mask` and `causal` are the decoder's one decision about the look-ahead mask
        (Transformer.decode): a mask to apply, or causal=True to let attention apply it itself."""
        y = self.self_attn_norm.sublayer_input(x)
        attended, self_w = self.self_attn(
            y,
            mask=self_mask,
            cache=self_cache,
            is_causal=causal,
            need_weights=need_weights,
            head_mask=self_head_mask,
        )
        x = self.self_attn_norm(x, attended)
        y = self.cross_attn_norm.sublayer_input(x)
        attended, cross_w = self.cross_attn(
            y,
            memory,
            src_mask,
            cache=cross_cache,
            static_kv=cross_cache is not None,
            need_weights=need_weights,
            head_mask=cross_head_mask,
        )
        x = self.cross_attn_norm(x, attended)
        x = self.ffn_norm(x, self.ffn(self.ffn_norm.sublayer_input(x)))
        return x, self_w, cross_w


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embeddings(cfg.vocab_size, cfg.d_model, cfg.pad_id)
        self.tgt_embed = self.src_embed if cfg.share_embeddings else Embeddings(cfg.vocab_size, cfg.d_model, cfg.pad_id)
        self.src_pos = PositionalEncoding(cfg.d_model, cfg.max_len, cfg.dropout, cfg.positional)
        self.tgt_pos = PositionalEncoding(cfg.d_model, cfg.max_len, cfg.dropout, cfg.positional)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        # Pre-norm leaves the residual stream un-normalised, so each stack ends with a LayerNorm.
        self.encoder_norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else nn.Identity()
        self.decoder_norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else nn.Identity()
        # The final linear layer before the softmax; tied to the embeddings when shared (§3.4).
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self._init_weights()
        if cfg.share_embeddings:
            self.generator.weight = self.tgt_embed.table.weight

    def _init_weights(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name and "learned" not in name:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    # ----------------------------------------------------------------------------------- encoder
    def encode(
        self,
        src: torch.Tensor,
        *,
        need_weights: bool = False,
        head_mask: HeadMask | None = None,
        src_embeds: torch.Tensor | None = None,
    ) -> Encoded:
        """src (B, S) token ids -> memory (B, S, d_model). `head_mask.encoder_self` silences heads.

        `src_embeds` (B, S, d_model) replaces the token embeddings of `src` (src still gives the
        padding mask): gradient attribution differentiates with respect to them.
        """
        if src.size(1) > self.cfg.max_len:
            raise ValueError(f"source has {src.size(1)} pieces; this model takes at most {self.cfg.max_len}")
        src_mask = padding_mask(src, self.cfg.pad_id)  # (B, 1, 1, S)
        x = self.src_pos(self.src_embed(src) if src_embeds is None else src_embeds)  # (B, S, d_model)
        weights = [] if need_weights else None
        for i, layer in enumerate(self.encoder_layers):
            layer_mask = None if head_mask is None else head_mask.layer("encoder_self", i)
            x, w = layer(x, src_mask=src_mask, need_weights=need_weights, head_mask=layer_mask)
            if weights is not None:
                weights.append(w)
        return Encoded(self.encoder_norm(x), src_mask, weights)

    # ----------------------------------------------------------------------------------- decoder
    def start_state(self, enc: Encoded, capacity: int = 0) -> DecoderState:
        """An empty cache, with the cross-attention keys/values of the memory projected once.

        `capacity`: target positions to preallocate in each self-attention cache (the decoding's step
        limit), so no step copies the cache; 0 lets them grow as needed.
        """
        b, cfg = enc.memory.size(0), self.cfg
        return DecoderState(
            self_attn=[
                KVCache.empty(enc.memory.new_empty(2, b, cfg.h, capacity, cfg.d_k)) for _ in self.decoder_layers
            ],
            cross_attn=[self._cross_cache(layer, enc.memory) for layer in self.decoder_layers],
        )

    @staticmethod
    def _cross_cache(layer: DecoderLayer, memory: torch.Tensor) -> KVCache:
        """The memory's keys/values, projected once per sentence; contiguous (B, h, S, d_k), so the
        search's fused step reads them as (B·h, S, d_k) views at every step without a copy."""
        kv = layer.cross_attn.project_kv(memory)
        return KVCache(kv.k.contiguous(), kv.v.contiguous())

    def decode(
        self,
        tgt: torch.Tensor,
        enc: Encoded,
        *,
        state: DecoderState | None = None,
        need_weights: bool = False,
        return_layers: bool = False,
        head_mask: HeadMask | None = None,
        tgt_embeds: torch.Tensor | None = None,
        full_context: bool = False,
        skip_generator: bool = False,
    ) -> Decoded:
        """tgt (B, T) target ids (BOS first) -> next-token logits (B, T, vocab).

        Without `state`: all T positions at once under the look-ahead mask (teacher forcing).
        With `state`: tgt holds only the new positions; their keys/values join the cache (give the
        same `head_mask` at every step, so the cache holds what that masked model computed).
        `tgt_embeds` (B, T, d_model) replaces the token embeddings of `tgt`, as `src_embeds` in encode.
        `full_context` lifts the look-ahead mask (only padding stays hidden): every position sees the
        whole given target. It is not how the model translates, but how Garg et al. (2019, §4.3) train
        and read an alignment head: the row of target piece t then knows the words after it too.
        `skip_generator=True` leaves out the generator (a vocabulary-sized product per position) for
        callers that read only the attention weights or the layers: `logits` is then None.
        """
        offset = state.length if state is not None else 0
        t = tgt.size(1)
        if offset + t > self.cfg.max_len:
            raise ValueError(f"target reaches {offset + t} pieces; this model takes at most {self.cfg.max_len}")
        x = self.tgt_pos(self.tgt_embed(tgt) if tgt_embeds is None else tgt_embeds, offset)  # (B, T, d_model)
        self_mask, causal = self._look_ahead(tgt, offset, cached=state is not None, full_context=full_context)
        self_ws, cross_ws = ([], []) if need_weights else (None, None)
        layers = [] if return_layers else None
        for i, layer in enumerate(self.decoder_layers):
            x, self_w, cross_w = layer(
                x,
                memory=enc.memory,
                src_mask=enc.src_mask,
                self_mask=self_mask,
                causal=causal,
                self_cache=None if state is None else state.self_attn[i],
                cross_cache=None if state is None else state.cross_attn[i],
                need_weights=need_weights,
                self_head_mask=None if head_mask is None else head_mask.layer("decoder_self", i),
                cross_head_mask=None if head_mask is None else head_mask.layer("cross", i),
            )
            if need_weights:
                self_ws.append(self_w)
                cross_ws.append(cross_w)
            if layers is not None:
                layers.append(x)
        if state is not None:
            state.length += t
        return Decoded(None if skip_generator else self.generator(self.decoder_norm(x)), self_ws, cross_ws, layers)

    def _look_ahead(
        self, tgt: torch.Tensor, offset: int, *, cached: bool, full_context: bool
    ) -> tuple[torch.Tensor | None, bool]:
        """The decoder self-attention's look-ahead rule, decided once per call: (mask, causal).

        A whole target (teacher forcing) lets the fused kernel apply causality itself (causal=True);
        one new query against the cache needs no mask (everything cached is its past), several new
        ones a mask offset past the cache; full_context hides only padding."""
        if full_context:
            if cached:
                raise ValueError("full_context is for a whole given target, not for incremental decoding")
            return padding_mask(tgt, self.cfg.pad_id), False  # (B, 1, 1, T)
        if not cached:
            return None, True
        t = tgt.size(1)
        return (subsequent_mask(t, offset=offset, device=tgt.device) if t > 1 else None), False  # (1, 1, T, offset+T)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, T, vocab) for training."""
        return self.decode(tgt_in, self.encode(src)).logits

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
