"""The search-side forward pass — encoder, cross-attention caches, decoder step — in as few operations
as the arithmetic needs.

`Transformer.encode` / `start_state` / `decode` over a `DecoderState` are the reference: they go through
every module (so hooks, attention weights, head masks and layer records work) and issue ~700 ATen
operations a decoder step. At batch 1 a step is that overhead plus reading the weights
(bench/README.md). `FusedStep` computes the same functions with
- the self-attention's W^Q and stacked W^K W^V as one (d_model × 3·d_model) product, in both stacks,
  and every decoder layer's cross-attention W^K W^V of the memory as one product;
- every product on a transposed copy of its weight, Wᵀ (in × out), as one `addmm`: on the CPU, MKL
  reads a one-row product's weight 1.3–1.5× faster that way than through `F.linear` — except where the
  inputs outnumber the outputs (W_2), which read W's rows (core/model/fast.py, `Product`). Large products of
  a packed model go to oneDNN on its packed weights instead, and an int8 model's
  (`fast_model(model, "int8")`, `--quantize int8`) to fbgemm's int8 kernels on its own int8 weights — on an
  Intel CPU, few rows through a small weight in fp32 on those int8 values (`SMALL_ROWS`); on a CPU with AMX, many
  rows in bf16 on them (`MANY_ROWS`) — (the products:
  core/model/fast.py);
- each sub-layer's variant (cached or beam-slot self-attention; absorbed, one-query or grouped
  cross-attention) chosen once per step, not per layer;
- attention written out for the one new query, on (N·h, T, d_k) views of the caches: 1/√d_k folded
  into W^Q, the source padding as an additive bias made once per batch, no masks built per step; for
  a single sentence, W^Q and W^O of the cross-attention multiplied into its keys and values (fp32 weights, or an
  int8 model's small weights multiplied in fp32 for one row: core/model/fast.py `SMALL_ROWS`);
- beam search's beams of a sentence on one row of its memory and of every cache (`group`, `BeamSlots`):
  a step's keys and values are written once into the sentence's slots and never reordered, each beam
  reading its own prefix through an ancestry mask; the caches' memory passes from search to search;
- no module calls, no dropout (inference), no records;
- one sentence's step (its row, or its beams) as one call into C where a compiler is at hand (core/model/native:
  the same function, without the ~100 operations' dispatch).
The numbers equal the modules' up to rounding (the same dot products, summed in another order).

`fused_step(model)` returns None where the modules must run: training mode, hooks registered (what
`tt inspect` and the analyses read through), or Linear layers that are neither fp32 nor int8 with
zero points of 0 (`--quantize bf16`).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.model import fast, native
from core.model.attention import KVCache
from core.model.fast import linear_kind, stacked_product
from core.model.masks import padding_mask
from core.model.transformer import BeamSlots, DecoderState, Encoded, Transformer


class _Layer:
    """One decoder layer's tensors, as the step reads them."""

    def __init__(self, layer: nn.Module, kind: str) -> None:
        sa, ca, ffn = layer.self_attn, layer.cross_attn, layer.ffn
        d, scale = sa.w_q.in_features, 1.0 / math.sqrt(sa.d_k)
        self.qkv = stacked_product([(sa.w_q, scale), (sa.w_kv, 1.0)], kind)  # (3d, d): Q scaled, then K, V
        self.self_out, self.cross_out = stacked_product([(sa.w_o, 1.0)], kind), stacked_product([(ca.w_o, 1.0)], kind)
        self.cross_q = stacked_product([(ca.w_q, scale)], kind)
        self.w_1, self.w_2 = stacked_product([(ffn.w_1, 1.0)], kind), stacked_product([(ffn.w_2, 1.0)], kind)
        self.norms = [_norm_args(n.norm) for n in (layer.self_attn_norm, layer.cross_attn_norm, layer.ffn_norm)]
        self.d = d


class _EncoderLayer:
    """One encoder layer's tensors: Q (scaled), K, V as one product, then W^O and the FFN."""

    def __init__(self, layer: nn.Module, kind: str) -> None:
        sa, ffn = layer.self_attn, layer.ffn
        self.qkv = stacked_product([(sa.w_q, 1.0 / math.sqrt(sa.d_k)), (sa.w_kv, 1.0)], kind)  # (3d, d)
        self.out = stacked_product([(sa.w_o, 1.0)], kind)
        self.w_1, self.w_2 = stacked_product([(ffn.w_1, 1.0)], kind), stacked_product([(ffn.w_2, 1.0)], kind)
        self.norms = [_norm_args(layer.self_attn_norm.norm), _norm_args(layer.ffn_norm.norm)]


class _AbsorbedCross:
    """One sentence's cross-attention with W^Q and W^O multiplied into its memory's keys and values.

    For head i, q_i k_j = y (W^Q_i k_jᵀ) + b^Q_i k_jᵀ and W^O mixes Σ_j p_ij v_j as Σ_j p_ij (v_j W^O_iᵀ):
    per step, two products with (h·S × d_model) matrices replace the two d_model × d_model ones
    (a fifth of their bytes for a 10-piece source) and the attention's own four operations.
    The same function, summed in another order.
    """

    def __init__(self, layer: _Layer, cache: KVCache, h: int) -> None:
        d = layer.d
        k, v = cache.flat_heads()  # (h, S, d_k): one row
        d_k, self.s, self.h = k.size(2), k.size(1), h
        # W^Q's rows per head, 1/√d_k folded in; the keys on the left: 2–3× faster than W^Qᵀ's columns per
        # head times kᵀ (bench/README.md, *A few rows on oneDNN*)
        w_q = layer.cross_q.weight_t.t().view(h, d_k, d)  # (h, d_k, d)
        self.scores = torch.bmm(k, w_q).permute(2, 0, 1).reshape(d, h * self.s)  # (h, S, d) -> (d, h·S)
        self.score_bias = torch.bmm(layer.cross_q.bias.view(h, 1, d_k), k.transpose(1, 2)).view(h * self.s)
        self.values = torch.bmm(v, layer.cross_out.weight_t.view(h, d_k, d)).view(h * self.s, d)  # (h·S, d)
        self.out_bias = layer.cross_out.bias

    def __call__(self, y: torch.Tensor) -> torch.Tensor:
        """y (1, d) the layer's cross-attention input -> the sub-layer's output (1, d), W^O applied."""
        p = torch.addmm(self.score_bias, y, self.scores).view(self.h, self.s).softmax(-1)  # (h, S)
        return torch.addmm(self.out_bias, p.view(1, self.h * self.s), self.values)


# The largest beam-search cache buffer a FusedStep keeps for the next search (`release`): beam 4 over 64
# sentences of 20 pieces takes ~110 MB of address space, of which a search touches a tenth to a third.
SPARE_MAX_BYTES = 256 << 20
SPARES = 4  # the most buffers a FusedStep keeps: one per part of a batch searched at once (core.decode.parts)


class FusedStep:
    """The decoder step of `model` over its cache, built once for the model's current weights."""

    def __init__(self, model: Transformer, kind: str) -> None:
        # The model keeps its step (_STEPS), so the step holds its model weakly: neither keeps the other alive.
        self._model, self.cfg = weakref.ref(model), model.cfg
        self.pre = model.cfg.norm == "pre"
        self.kind = kind
        self.layers = [_Layer(layer, kind) for layer in model.decoder_layers]
        self.encoder_layers = [_EncoderLayer(layer, kind) for layer in model.encoder_layers]
        # Every decoder layer's W^K W^V of the memory stacked: the cross-attention caches in one product.
        self.cross_kv = stacked_product([(layer.cross_attn.w_kv, 1.0) for layer in model.decoder_layers], kind)
        self.generator = stacked_product([(model.generator, 1.0)], kind)
        # Absorbing W^Q and W^O into one sentence's memory is fp32 arithmetic: an int8 model's cross-attention
        # absorbs them where one row of its W^Q and W^O is multiplied in fp32 anyway (core/model/fast.py,
        # `SMALL_ROWS`: the int8 weights' own values), and keeps its own products elsewhere.
        self.absorbs = all(
            getattr(p, "weight_t", None) is not None for layer in self.layers for p in (layer.cross_q, layer.cross_out)
        )
        # The embeddings, positions and final norms, read once here rather than through the modules every step.
        self.src_table, self.src_scale = model.src_embed.table.weight, model.src_embed.scale
        self.tgt_table, self.tgt_scale = model.tgt_embed.table.weight, model.tgt_embed.scale
        self.tgt_positions = model.tgt_pos.positions(model.tgt_pos.max_len)  # (max_len, d): a view of the table
        # The stacks' final norms: pre-norm only (post-norm's are nn.Identity, None here).
        self.encoder_norm, self.decoder_norm = _norm_args(model.encoder_norm), _norm_args(model.decoder_norm)
        self.key = _weights_key(model)
        self.watched: list[nn.Module] = []  # the modules whose hooks would send decoding through them
        self._bias_for: tuple[torch.Tensor, torch.Tensor | None] | None = None
        # The last searches' self-attention buffers, for the next ones (`release`): fresh memory costs a page
        # fault for every 4 kB a search writes. Up to SPARES of them (a batch's parts search at once, each with its
        # own), the largest kept; taken under a lock, since another thread may decode with the same model.
        self._spares: list[torch.Tensor] = []
        self._spare_lock = threading.Lock()
        # One sentence's step in C (core/model/native): the library and the weights as it reads them, made on the
        # first such step; None where it cannot run (no compiler, TT_NATIVE=0, weights off the CPU).
        self._native: tuple | None = None
        self._native_lock = threading.Lock()

    def encode(self, src: torch.Tensor) -> Encoded:
        """`Transformer.encode` of src (B, S) without the modules: the same memory up to rounding."""
        model, cfg = self.model, self.cfg
        if src.size(1) > cfg.max_len:
            raise ValueError(f"source has {src.size(1)} pieces; this model takes at most {cfg.max_len}")
        b, s, d, h = src.size(0), src.size(1), cfg.d_model, cfg.h
        src_mask = padding_mask(src, cfg.pad_id)  # (B, 1, 1, S)
        real = _real_positions(src_mask)  # (N,), None without padding
        bias = None  # the padding as an additive mask, made once for every layer; none without padding
        if real is not None:
            bias = torch.zeros(src_mask.shape, device=src.device).masked_fill_(~src_mask, float("-inf"))
        x = torch.add(model.src_pos.positions(s), F.embedding(src, self.src_table), alpha=self.src_scale)  # (B, S, d)
        x = x.view(b * s, d)
        # With padding, every product runs on the real tokens only (N of the B·S positions; as CTranslate2's
        # encoder does): in a batch of sentences sorted by length, padding was half the encoder's rows. Only the
        # attention reads them laid out by sentence, with zeros at the padding it masks.
        if real is not None:
            x = x.index_select(0, real)  # (N, d)
        for layer in self.encoder_layers:
            qkv = _spread(layer.qkv(self._norm(x, layer.norms[0]) if self.pre else x), real, b * s)  # (B·S, 3d)
            q, k, v = qkv.view(b, s, 3, h, cfg.d_k).permute(2, 0, 3, 1, 4)  # 3 × (B, h, S, d_k)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0)  # (B, h, S, d_k)
            heads = heads.transpose(1, 2).reshape(b * s, d)
            heads = heads if real is None else heads.index_select(0, real)  # (N, d)
            x = self._residual(x, layer.out(heads), layer.norms[0])
            y = self._norm(x, layer.norms[1]) if self.pre else x
            x = self._residual(x, layer.w_2(layer.w_1(y).relu_()), layer.norms[1])
        x = x if self.encoder_norm is None else torch.layer_norm(x, *self.encoder_norm)
        return Encoded(_spread(x, real, b * s).view(b, s, d), src_mask, None)

    def start_state(self, enc: Encoded, capacity: int = 0, beam: int = 0) -> DecoderState:
        """`Transformer.start_state`: empty self-attention caches for `capacity` positions, and the
        memory's keys/values for every layer from one product, each contiguous (B, h, S, d_k).

        `beam` > 0: caches for beam search, a sentence's beams together (`BeamSlots`): `beam` slots a
        step in each sentence's row, which the steps then read with `group` rows a sentence."""
        cfg = self.cfg
        b, s, d = enc.memory.shape
        n_layers = len(self.layers)
        real, rows = _real_positions(enc.src_mask), enc.memory.reshape(b * s, d)
        rows = rows if real is None else rows.index_select(0, real)
        kv = _spread(self.cross_kv(rows), real, b * s)  # (B·S, L·2d): the keys and values of real tokens only
        kv = kv.view(b, s, n_layers, 2, cfg.h, cfg.d_k).permute(2, 3, 0, 4, 1, 5).contiguous()  # (L, 2, B, h, S, d_k)
        slots = capacity * max(beam, 1)
        shape = (n_layers, 2, b, cfg.h, slots, cfg.d_k)  # (L, 2, B, h, T, d_k)
        memory = self._take_spare(enc.memory, math.prod(shape))
        buffer = memory.narrow(0, 0, math.prod(shape)).view(shape)
        # beam > 0: no slot is anyone's ancestor yet
        beams = BeamSlots(beam, enc.memory.new_full((b, slots), float("-inf"))) if beam > 0 else None
        return DecoderState(
            self_attn=[KVCache.empty(buffer[i]) for i in range(n_layers)],
            cross_attn=[KVCache(kv[i, 0], kv[i, 1]) for i in range(n_layers)],
            beams=beams,
            spare=memory,
        )

    def _take_spare(self, like: torch.Tensor, numel: int) -> torch.Tensor:
        """A flat allocation of at least `numel` elements for a search's caches: the smallest kept one that is
        large enough (taken out of the list, so no two searches share it), else new. Fresh memory costs a page
        fault at every 4 kB first written, and a step writes one position of every (row, head): in batches of
        64, greedy's cache writes took 5 % of its time with a new buffer per search."""
        with self._spare_lock:
            fits = [m for m in self._spares if m.numel() >= numel and m.dtype == like.dtype and m.device == like.device]
            if fits:
                spare = min(fits, key=torch.Tensor.numel)
                self._spares = [m for m in self._spares if m is not spare]
                return spare
        return like.new_empty(numel + numel // 4)  # room for the next, somewhat longer, batch

    def release(self, state: DecoderState) -> None:
        """The search that made `state` is over: its buffer may serve the next one. Nothing may read
        `state` afterwards."""
        if state.spare is not None:
            memory, state.spare = state.spare, None
            if memory.numel() * memory.element_size() > SPARE_MAX_BYTES:
                return  # a long-lived process (tt serve) does not keep a huge batch's buffer
            with self._spare_lock:
                self._spares = sorted([*self._spares, memory], key=torch.Tensor.numel)[-SPARES:]

    @property
    def model(self) -> Transformer:
        return self._model()

    def __call__(self, tgt: torch.Tensor, enc: Encoded, state: DecoderState, group: int = 1) -> torch.Tensor:
        """tgt (N, 1) the newest pieces -> next-piece logits (N, vocab); the caches grow by one position.

        `group` rows in a row share one source: the memory and the cross-attention caches hold N / group
        rows (beam search's beams of one sentence), and each of their rows is read once for its group's
        queries rather than copied per row. With `state.beams` the self-attention caches do the same:
        the group's new keys and values go into their sentence's slots for this step, and each query
        reads the slots of its own prefix (`BeamSlots.ancestry`)."""
        cfg = self.cfg
        n, offset = tgt.size(0), state.length
        if offset + 1 > cfg.max_len:
            raise ValueError(f"target reaches {offset + 1} pieces; this model takes at most {cfg.max_len}")
        beams = state.beams
        one_sentence = n == 1 if beams is None else n == group  # its one row, or its beams
        if one_sentence and n <= native.MAX_ROWS and tgt.is_contiguous():
            bound = self._bound(state, enc)
            if bound is not None:
                logits = torch.empty(n, cfg.vocab_size)
                if bound(tgt, offset, logits, beams):
                    grown = 1 if beams is None else beams.k
                    for cache in state.self_attn:
                        cache.length += grown
                    state.length += 1
                    return logits
        x = torch.add(self.tgt_positions[offset], F.embedding(tgt.view(n), self.tgt_table), alpha=self.tgt_scale)
        self_attention = self._self_attention(state, n, group)
        cross_attention = self._cross_attention(enc, state, n, group)
        for i, layer in enumerate(self.layers):
            qkv = layer.qkv(self._norm(x, layer.norms[0]) if self.pre else x)  # (N, 3d): Q scaled, K, V
            x = self._residual(x, layer.self_out(self_attention(i, qkv)), layer.norms[0])
            y = self._norm(x, layer.norms[1]) if self.pre else x
            x = self._residual(x, cross_attention(i, y), layer.norms[1])
            y = self._norm(x, layer.norms[2]) if self.pre else x
            x = self._residual(x, layer.w_2(layer.w_1(y).relu_()), layer.norms[2])
        state.length += 1
        x = x if self.decoder_norm is None else torch.layer_norm(x, *self.decoder_norm)
        return self.generator(x)  # (N, vocab)

    def _bound(self, state: DecoderState, enc: Encoded):
        """The C step bound to this one sentence's state (core/model/native), kept on the state while its caches stand;
        None where it cannot run: no library, weights off the CPU, padding, caches it cannot read."""
        memo = state.native
        if memo is not None:
            if memo[0] is self and memo[1].stands(state.self_attn, state.cross_attn):
                return memo[1]
        weights = self._native_weights() if native.enabled() else None
        if weights is None or not bool(enc.src_mask.all()):
            return None
        if not native.Bound.fits(state.self_attn, state.cross_attn, state.beams):
            return None
        per_step = 1 if state.beams is None else state.beams.k
        if any(cache.length != state.length * per_step for cache in state.self_attn):
            return None
        bound = native.Bound(*weights, state.self_attn, state.cross_attn)
        state.native = (self, bound)
        return bound

    def _native_weights(self) -> tuple | None:
        """(`native.Weights`, the model's dimensions), made once; None where the C step cannot run."""
        if self._native is None:
            with self._native_lock:
                if self._native is None:
                    self._native = self._make_native()
        return self._native or None

    def _make_native(self) -> tuple:
        lib = native.library()
        if lib is None or self.tgt_table.device.type != "cpu" or self.tgt_table.dtype != torch.float32:
            return ()
        cfg = self.cfg

        def spec(p) -> tuple:
            # An int8 product as the torch step computes one row of it: the int8 values times the row in fp32 where
            # it takes few rows so (`Int8Product.small`), else the row quantized as fbgemm does — the product's own
            # C product (`Int8Product.c_product`), its packed weights shared.
            if self.kind == "int8":
                return ("int8", *p.int8) if p.small is not None else ("rows", p.c_product())
            return ("fp32", p.weight_t, p.bias)

        if self.kind == "int8" and not fast.REDUCE_RANGE:
            return ()  # 8-bit rows: step.c quantizes to fbgemm's 7 bits only

        names = ("qkv", "self_out", "cross_q", "cross_out", "w_1", "w_2")
        products = {name: [spec(getattr(layer, name)) for layer in self.layers] for name in names}
        norms = [[(args[1], args[2]) for args in layer.norms] for layer in self.layers]
        final = None if self.decoder_norm is None else (self.decoder_norm[1], self.decoder_norm[2])
        with torch.no_grad():
            weights = native.Weights(products, spec(self.generator), norms, final, (self.tgt_table, self.tgt_positions))
        dims = dict(
            d=cfg.d_model,
            h=cfg.h,
            d_k=cfg.d_k,
            d_ff=cfg.d_ff,
            vocab=cfg.vocab_size,
            pre=int(self.pre),
            eps=float(self.layers[0].norms[0][3]),
            emb_scale=float(self.tgt_scale),
        )
        return (weights, dims)

    def _self_attention(self, state: DecoderState, n: int, group: int) -> Callable[[int, torch.Tensor], torch.Tensor]:
        """This step's self-attention, chosen once for all layers: (layer i, its qkv (N, 3d)) -> the heads (N, d)
        before W^O, the layer's cache grown by this step's keys and values."""
        h, d_k, d = self.cfg.h, self.cfg.d_k, self.cfg.d_model
        caches = state.self_attn
        if state.beams is None:

            def attend(i: int, qkv: torch.Tensor) -> torch.Tensor:
                cache = caches[i]
                cache.append_pair(qkv[:, d:].view(n, 2, h, d_k).transpose(0, 1))  # K, V: (2, N, h, d_k)
                k, v = cache.flat_heads()  # (N·h, T, d_k)
                return _attend(qkv[:, :d].reshape(n * h, 1, d_k), k, v, None).view(n, d)

            return attend
        # Beam search: the group's keys and values go into their sentence's slots, each query reading its prefix.
        beams, sources = state.beams, n // group
        prefix = self._prefix_bias(beams, state.length, sources, group)  # (N/group, 1, group, slots so far)

        def attend_slots(i: int, qkv: torch.Tensor) -> torch.Tensor:
            cache = caches[i]
            cache.append_slots(qkv[:, d:].view(sources, group, 2, h, d_k).permute(2, 0, 1, 3, 4), beams.k)
            k, v = cache.flat_heads()  # (N/group·h, slots, d_k)
            q = qkv[:, :d].view(sources, group, h, d_k).transpose(1, 2).reshape(sources * h, group, d_k)
            heads = _attend_grouped(q, k, v, prefix)  # (N/group·h, group, d_k)
            return heads.view(sources, h, group, d_k).transpose(1, 2).reshape(n, d)

        return attend_slots

    def _cross_attention(
        self, enc: Encoded, state: DecoderState, n: int, group: int
    ) -> Callable[[int, torch.Tensor], torch.Tensor]:
        """This step's cross-attention, chosen once for all layers: (layer i, its input y (N, d)) -> the
        sub-layer's output (N, d), W^O applied."""
        src_bias = self._source_bias(enc.src_mask)  # (N·h, 1, S) or None
        if n == 1 and src_bias is None and self.absorbs:
            absorbed = self._absorbed(state)
            return lambda i, y: absorbed[i](y)
        h, d_k, d = self.cfg.h, self.cfg.d_k, self.cfg.d_model
        layers, caches, sources = self.layers, state.cross_attn, n // group

        def attend(i: int, y: torch.Tensor) -> torch.Tensor:
            k, v = caches[i].flat_heads()  # (N·h, S, d_k)
            q = layers[i].cross_q(y).view(n * h, 1, d_k)
            return layers[i].cross_out(_attend(q, k, v, src_bias).view(n, d))

        def attend_grouped(i: int, y: torch.Tensor) -> torch.Tensor:
            k, v = caches[i].flat_heads()  # (N/group·h, S, d_k): a source's group of queries read it at once
            q = layers[i].cross_q(y).view(sources, group, h, d_k).transpose(1, 2).reshape(sources * h, group, d_k)
            heads = _attend(q, k, v, src_bias).view(sources, h, group, d_k)
            return layers[i].cross_out(heads.transpose(1, 2).reshape(n, d))

        return attend if group == 1 else attend_grouped

    def _absorbed(self, state: DecoderState) -> list[_AbsorbedCross]:
        """The cross-attention of every layer for a single sentence, made once per sentence (kept on
        the state until its caches change)."""
        memo = state.absorbed
        if memo is not None and memo[0] is self and memo[1] is state.cross_attn[0]._k:
            return memo[2]
        absorbed = [_AbsorbedCross(layer, cache, self.cfg.h) for layer, cache in zip(self.layers, state.cross_attn)]
        state.absorbed = (self, state.cross_attn[0]._k, absorbed)
        return absorbed

    @staticmethod
    def _prefix_bias(beams: BeamSlots, offset: int, sources: int, group: int) -> torch.Tensor:
        """This step's view of `beams.ancestry`, (N/group, 1, group, slots so far): each row's own new
        slot joins its prefix first."""
        filled = (offset + 1) * beams.k
        mine = beams.ancestry.view(sources, group, -1).narrow(2, offset * beams.k, group)  # (N/group, g, g)
        mine.diagonal(dim1=1, dim2=2).fill_(0.0)
        return beams.ancestry.narrow(1, 0, filled).view(sources, 1, group, filled)

    def _source_bias(self, src_mask: torch.Tensor) -> torch.Tensor | None:
        """The source padding as 0 / -inf per (row, head), made once per mask (a batch keeps its mask
        object until rows leave it); None when no row has padding."""
        memo = self._bias_for  # read once: another thread may decode with the same model
        if memo is not None and memo[0] is src_mask:
            return memo[1]
        bias = None
        if not bool(src_mask.all()):
            n, s = src_mask.size(0), src_mask.size(-1)
            bias = torch.zeros(n, self.cfg.h, 1, s, device=src_mask.device)  # (N, h, 1, S)
            bias.masked_fill_(~src_mask, float("-inf"))
            bias = bias.view(n * self.cfg.h, 1, s)
        self._bias_for = (src_mask, bias)
        return bias

    @staticmethod
    def _norm(x: torch.Tensor, norm: tuple) -> torch.Tensor:
        return torch.layer_norm(x, *norm)  # F.layer_norm without its Python wrapper

    def _residual(self, x: torch.Tensor, sub: torch.Tensor, norm: tuple) -> torch.Tensor:
        y = x + sub
        return y if self.pre else torch.layer_norm(y, *norm)


def _real_positions(src_mask: torch.Tensor) -> torch.Tensor | None:
    """The flat (B·S) positions of a batch's real tokens from its padding mask (B, 1, 1, S); None without padding."""
    return None if bool(src_mask.all()) else src_mask.reshape(-1).nonzero().squeeze(1)


def _spread(rows: torch.Tensor, real: torch.Tensor | None, n: int) -> torch.Tensor:
    """The rows of a batch's real tokens (N, k) laid out at their positions among all `n`, zeros at the padding;
    `rows` itself where there is no padding (`real` None)."""
    if real is None:
        return rows
    return rows.new_zeros(n, rows.size(1)).index_copy_(0, real, rows)


def _norm_args(norm: nn.Module) -> tuple | None:
    """A LayerNorm's arguments to torch.layer_norm after the input (its parameters themselves, so an update in
    place reaches the step); None for an nn.Identity."""
    if isinstance(norm, nn.Identity):
        return None
    return norm.normalized_shape, norm.weight, norm.bias, norm.eps


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """softmax(q kᵀ + bias) v for a few (already scaled) queries per row and head: q (N·h, g, d_k),
    k, v (N·h, T, d_k), bias (N·h, 1, T) -> (N·h, g, d_k). For so few queries, two batched products beat
    the fused kernel; for one query per row, step.c's `attend_rows` beats both (core/model/native)."""
    if q.size(1) == 1:
        out = native.attend_rows(q, k, v, bias)
        if out is not None:
            return out
    scores = torch.bmm(q, k.transpose(1, 2)) if bias is None else torch.baddbmm(bias, q, k.transpose(1, 2))
    return torch.bmm(scores.softmax(-1), v)


def _attend_grouped(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """`_attend` for a sentence's group of queries over its beam slots: q (S·h, g, d_k), k, v (S·h, T, d_k),
    bias (S, 1, g, T) the same for every head -> (S·h, g, d_k)."""
    scores = torch.bmm(q, k.transpose(1, 2))  # (S·h, g, T)
    scores.view(bias.size(0), -1, *scores.shape[1:]).add_(bias)
    return torch.bmm(scores.softmax(-1), v)


def _read_linears(model: Transformer) -> list[nn.Module]:
    """The Linear layers whose weights the fused path copies, in a fixed order. Read through the
    `_modules` dicts: ten times cheaper than attribute access, and this runs once per search."""
    out = []
    for layer in model._modules["encoder_layers"]._modules.values():
        sa, ffn = layer._modules["self_attn"]._modules, layer._modules["ffn"]._modules
        out += [sa["w_q"], sa["w_kv"], sa["w_o"], ffn["w_1"], ffn["w_2"]]
    for layer in model._modules["decoder_layers"]._modules.values():
        sa, ca, ffn = (layer._modules[name]._modules for name in ("self_attn", "cross_attn", "ffn"))
        out += [sa["w_q"], sa["w_kv"], sa["w_o"], ca["w_q"], ca["w_kv"], ca["w_o"], ffn["w_1"], ffn["w_2"]]
    return [*out, model._modules["generator"]]


def _read_directly(model: Transformer) -> list[nn.Module]:
    """The modules whose parameters the fused path reads as they are (not copied): the layer norms, the
    embedding tables and the positions."""
    m = model._modules
    out = [m["src_embed"]._modules["table"], m["tgt_embed"]._modules["table"], m["src_pos"], m["tgt_pos"]]
    out += [m["encoder_norm"], m["decoder_norm"]]
    for stack, names in (("encoder_layers", _ENCODER_NORMS), ("decoder_layers", _DECODER_NORMS)):
        for layer in m[stack]._modules.values():
            out += [layer._modules[name]._modules["norm"] for name in names]
    return out


_ENCODER_NORMS = ("self_attn_norm", "ffn_norm")
_DECODER_NORMS = ("self_attn_norm", "cross_attn_norm", "ffn_norm")


def _weights_key(model: Transformer) -> tuple:
    """Changes when one of the weights the step copies or reads is replaced (a new layer or parameter) or
    updated in place (a training step). Inference tensors (made under torch.inference_mode) keep no version:
    they are never trained."""
    return tuple(
        (id(p), -1 if p.is_inference() else p._version)
        for module in (*_read_linears(model), *_read_directly(model))
        for p in module._parameters.values()
        if p is not None
    )


def _stood_in_for(model: Transformer) -> list[nn.Module]:
    """The modules the fused path stands in for: a hook on any of them sends decoding through the modules."""
    return [m for m in model.modules() if m is not model]


def _hooked(modules: list[nn.Module]) -> bool:
    from torch.nn.modules import module as m

    if m._global_forward_hooks or m._global_forward_pre_hooks:
        return True
    return any(mod._forward_hooks or mod._forward_pre_hooks for mod in modules)


_STEPS: weakref.WeakKeyDictionary[Transformer, FusedStep] = weakref.WeakKeyDictionary()


def fused_step(model: Transformer) -> FusedStep | None:
    """The model's FusedStep (kept on the model, rebuilt when its weights change), or None where the
    modules must run: training, hooks, Linear layers neither fp32 nor int8 (bf16).

    Called once per search: the check of a kept step reads ~20 layers, not the whole model."""
    if model.training:
        return None
    step = _STEPS.get(model)
    if step is not None and step.key == _weights_key(model):
        return None if _hooked(step.watched) else step
    watched = _stood_in_for(model)
    if _hooked(watched):
        return None
    linears = _read_linears(model)
    kinds = {linear_kind(m) for m in linears}
    if len(kinds) != 1 or None in kinds:
        return None
    with torch.no_grad():
        step = FusedStep(model, kinds.pop())
    step.watched = watched
    _STEPS[model] = step  # beside the model, not on it: a copy of the model (fast_model) builds its own
    return step
