"""One incremental decoder step with fewer operations, for the search loops.

`Transformer.decode` over a `DecoderState` is the reference: it goes through every module (so hooks,
attention weights, head masks and layer records work) and runs ~60 small PyTorch operations a step.
At batch 1 a step is that overhead plus reading the weights (bench/README.md). `FusedStep` computes the
same function with
- the self-attention's W^Q and stacked W^K W^V as one (3·d_model × d_model) product (one weight read,
  one call instead of two per layer);
- no module calls, no dropout (inference), no records: functional calls on the layers' own tensors.
Every product keeps the layer's own kind: a packed model (core/model/fast.py) gets packed fused weights.
The numbers equal the modules' up to summation order (the fused product is the same dot products).

`fused_step(model)` returns None where the modules must run: training mode, hooks registered (what
`tt inspect` and the analyses read through), or Linear layers that are not plain fp32 (--quantize).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from core.model.transformer import DecoderState, Encoded, Transformer


def _has_hooks(model: nn.Module) -> bool:
    from torch.nn.modules import module as m

    if m._global_forward_hooks or m._global_forward_pre_hooks:
        return True
    return any(mod._forward_hooks or mod._forward_pre_hooks for mod in model.modules())


def _linear_kind(layer: nn.Module) -> str | None:
    from core.model.fast import PackedLinear

    if type(layer) is nn.Linear:
        return "plain"
    if type(layer) is PackedLinear:
        return "packed"
    return None


def _stacked(layers: list[nn.Module], kind: str) -> nn.Module:
    """One Linear whose output is the given layers' outputs side by side."""
    from core.model.fast import PackedLinear

    weight = torch.cat([layer.weight for layer in layers]).detach()
    bias = torch.cat([layer.bias for layer in layers]).detach()
    out = nn.Linear(weight.size(1), weight.size(0), device=weight.device, dtype=weight.dtype)
    out.weight, out.bias = nn.Parameter(weight, requires_grad=False), nn.Parameter(bias, requires_grad=False)
    return PackedLinear(out) if kind == "packed" else out


class FusedStep:
    """The decoder step of `model` over its cache, built once for the model's current weights."""

    def __init__(self, model: Transformer, kind: str) -> None:
        self.model, self.cfg = model, model.cfg
        self.pre = model.cfg.norm == "pre"
        self.qkv = [_stacked([layer.self_attn.w_q, layer.self_attn.w_kv], kind) for layer in model.decoder_layers]
        self.key = _weights_key(model)

    def __call__(self, tgt: torch.Tensor, enc: Encoded, state: DecoderState) -> torch.Tensor:
        """tgt (N, 1) the newest pieces -> next-piece logits (N, vocab); the caches grow by one position."""
        model, d, h = self.model, self.cfg.d_model, self.cfg.h
        n, offset = tgt.size(0), state.length
        if offset + 1 > self.cfg.max_len:
            raise ValueError(f"target reaches {offset + 1} pieces; this model takes at most {self.cfg.max_len}")
        x = model.tgt_embed(tgt) + model.tgt_pos.positions(1, offset)  # (N, 1, d)
        for i, layer in enumerate(model.decoder_layers):
            norm = layer.self_attn_norm.norm
            q, k, v = self.qkv[i](F.layer_norm(x, (d,), norm.weight, norm.bias, norm.eps) if self.pre else x).split(
                d, dim=-1
            )  # 3 × (N, 1, d)
            cache = state.self_attn[i]
            cache.append(k.view(n, 1, h, -1).transpose(1, 2), v.view(n, 1, h, -1).transpose(1, 2))
            x = self._residual(x, self._attend(layer.self_attn, q, cache.k, cache.v, None), norm)
            norm = layer.cross_attn_norm.norm
            y = F.layer_norm(x, (d,), norm.weight, norm.bias, norm.eps) if self.pre else x
            cross = state.cross_attn[i]
            x = self._residual(
                x, self._attend(layer.cross_attn, layer.cross_attn.w_q(y), cross.k, cross.v, enc.src_mask), norm
            )
            norm = layer.ffn_norm.norm
            y = F.layer_norm(x, (d,), norm.weight, norm.bias, norm.eps) if self.pre else x
            x = self._residual(x, layer.ffn.w_2(torch.relu(layer.ffn.w_1(y))), norm)
        state.length += 1
        return model.generator(model.decoder_norm(x[:, -1]))  # (N, vocab)

    def _attend(self, attn: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask) -> torch.Tensor:
        n = q.size(0)
        q = q.view(n, 1, attn.h, attn.d_k).transpose(1, 2)  # (N, h, 1, d_k)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (N, h, 1, d_k)
        return attn.w_o(out.transpose(1, 2).reshape(n, 1, attn.h * attn.d_k))

    def _residual(self, x: torch.Tensor, sub: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
        y = x + sub
        return y if self.pre else F.layer_norm(y, y.shape[-1:], norm.weight, norm.bias, norm.eps)


def _weights_key(model: Transformer) -> tuple:
    """Changes when a self-attention projection is replaced or updated in place (a training step).
    Inference tensors (made under torch.inference_mode) keep no version: they are never trained."""
    return tuple(
        (p.data_ptr(), -1 if p.is_inference() else p._version)
        for layer in model.decoder_layers
        for p in (*layer.self_attn.w_q.parameters(), *layer.self_attn.w_kv.parameters())
    )


def fused_step(model: Transformer) -> FusedStep | None:
    """The model's FusedStep (kept on the model, rebuilt when its weights change), or None where the
    modules must run: training, hooks, quantized or other non-fp32 Linear layers."""
    if model.training or _has_hooks(model):
        return None
    linears = [m for m in model.decoder_layers.modules() if isinstance(m, nn.Module) and hasattr(m, "in_features")]
    kinds = {_linear_kind(m) for m in linears}
    if len(kinds) != 1 or None in kinds or any(m.weight.dtype != torch.float32 for m in linears):
        return None
    step = model.__dict__.get("_fused_step")
    if step is None or step.key != _weights_key(model):
        step = FusedStep(model, kinds.pop())
        model.__dict__["_fused_step"] = step  # a plain attribute: not a submodule, not in the state dict
    return step
