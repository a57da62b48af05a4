"""Faster inference copies of a model, and the products the fused decoding path computes with them.

- `packed_model`: the fp32 model with every Linear layer computed by oneDNN on weights packed once
  into its blocked layout. The same function (only the summation order differs), and on AMD CPUs (Zen 5)
  1.5–2.5× faster for the model's GEMMs than torch's default fp32 path, MKL (bench/README.md); on Intel's,
  slower (`packing_pays`). It also differentiates with respect to its input, for attribution.
- `fast_model`: int8 dynamic quantization of the Linear layers (weights per output row, activations per input
  row: `Int8Linear`), or bf16. Both are approximations of the fp32 model, offered by `tt translate --quantize`
  (the BLEU they cost per set: the cards' Precision sections and docs/precision.md; bench/bench_ct2.py measures
  speed).

`fast_model` returns a converted copy; `packed_model` a copy or, asked to, the model itself changed.

- `stacked_product`: one frozen x Wᵀ + b over the rows of one or more of a model's Linear layers, on the kernel
  its kind computes fastest — `Product` (fp32: MKL's `addmm` on Wᵀ, or oneDNN on a packed copy) or
  `Int8Product` (fbgemm's int8 kernels; few rows of a small weight in fp32 on an Intel CPU, `SMALL_ROWS`; many rows in
  bf16 on a CPU with AMX, `MANY_ROWS`). core/model/step.py builds the decoding steps from them.
"""

from __future__ import annotations

import copy
import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from core.model import native

MODES = ("int8", "bf16")
# A product smaller than this many multiply-adds (rows × in × out) stays on torch's F.linear:
# oneDNN's per-call overhead outweighs its faster kernel there (bench/README.md: at 1 thread the
# break-even is ~1M for the model's shapes). 2M keeps a single sentence's decoding steps, and so
# `tt translate "…"`, off oneDNN and free of the packing cost (the 8000-piece generator is 2.05M
# per row); a batch of two or more sentences goes through it.
PACK_MIN_MACS = 1 << 21


def packing_available() -> bool:
    """oneDNN is built into this torch (the official CPU wheels) and can run fp32 linear layers."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def packing_pays() -> bool:
    """Whether `load_model(packed=True)` packs for oneDNN on this CPU: where oneDNN is available and the CPU
    is not Intel's. torch's default fp32 products are MKL's, which on AMD CPUs take a slower path: there
    oneDNN's packed products were 1.5–3.5× faster (Zen 5). On an Intel Xeon with AMX (family 6 model 207) MKL's
    were as fast or faster for most of this model's shapes (oneDNN ahead only on the generator from 16 rows at 2
    threads, 1.2–1.3×), and batches of 64 decoded faster plain in greedy (+2 … +31 % in three measurements) and
    either way in beams (−6 … +30 %) (bench/README.md, *Packing only where it pays; oneDNN's int8 tried*)."""
    from core.device import cpu_vendor

    return packing_available() and cpu_vendor() != "GenuineIntel"


def onednn_linear(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


class _PackedLinearFunction(torch.autograd.Function):
    """y = x Wᵀ + b on packed weights; the backward gives the input's gradient only (x's, for attribution)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, packed: torch.Tensor, packed_t: torch.Tensor, bias: torch.Tensor | None):
        ctx.packed_t = packed_t
        return onednn_linear(x, packed, bias)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return onednn_linear(grad.contiguous(), ctx.packed_t, None), None, None, None


class PackedLinear(nn.Module):
    """An fp32 nn.Linear for inference whose weight is also packed for oneDNN (once, on first use).

    Products of at least PACK_MIN_MACS multiply-adds go through oneDNN; smaller ones through
    F.linear on the plain weight. No weight gradients: the parameters are frozen, and must not
    change after the first packed call (the packed copy would not follow).
    """

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        # The same tensors as the Linear's (frozen): no copy, and tied weights stay tied.
        self.weight = linear.weight.requires_grad_(False)
        self.bias = None if linear.bias is None else linear.bias.requires_grad_(False)
        # Packed (blocked) layouts are opaque mkldnn tensors: plain attributes, not parameters or
        # buffers, made on first use (a single short sentence never needs them; its steps are small).
        self._packed: torch.Tensor | None = None
        self._packed_t: torch.Tensor | None = None  # Wᵀ, for input gradients

    def packed(self) -> torch.Tensor:
        """The weight in oneDNN's packed layout (for `onednn_linear`), packed on first use."""
        return self._packed if self._packed is not None else self._pack(False)

    def _pack(self, transposed: bool) -> torch.Tensor:
        with torch.no_grad():
            if transposed:
                if self._packed_t is None:
                    self._packed_t = torch.ops.mkldnn._reorder_linear_weight(self.weight.t().contiguous(), 64)
                return self._packed_t
            if self._packed is None:
                self._packed = torch.ops.mkldnn._reorder_linear_weight(self.weight, 64)
            return self._packed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // self.in_features
        if (
            rows * self.in_features * self.out_features < PACK_MIN_MACS
            or x.dtype != torch.float32
            or x.device.type != "cpu"
        ):
            return F.linear(x, self.weight, self.bias)
        flat = x.reshape(rows, self.in_features)
        if not flat.is_contiguous():
            flat = flat.contiguous()
        if torch.is_grad_enabled() and x.requires_grad:
            y = _PackedLinearFunction.apply(flat, self._pack(False), self._pack(True), self.bias)
        else:
            y = onednn_linear(flat, self._pack(False), self.bias)
        return y.view(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, packed"


def packed_model(model: nn.Module, *, inplace: bool = False) -> nn.Module:
    """`model` (eval mode, CPU, fp32) with its nn.Linear layers as PackedLinear: a copy, or the model
    itself changed in place (what a command that just loaded it wants: a copy costs ~0.2 s).

    The packed layers share the Linear layers' weight tensors (the generator's is the embedding
    table, still tied). Returns `model` unchanged where oneDNN is not available.
    """
    if not packing_available():
        return model
    fast = (model if inplace else copy.deepcopy(model)).eval()
    for module in list(fast.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Linear:
                setattr(module, name, PackedLinear(child))
    return fast


def fast_model(model: nn.Module, mode: str) -> nn.Module:
    """A copy of `model` (eval mode) for inference: mode "int8" (a model on the CPU) or "bf16"."""
    if mode not in MODES:
        raise ValueError(f"quantize mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "int8" and any(p.device.type != "cpu" for p in model.parameters()):
        from core.errors import ConfigError

        raise ConfigError("--precision int8 runs on the CPU only (use --device cpu, or --precision bf16)")
    fast = copy.deepcopy(model).eval()
    if mode == "bf16":
        return fast.to(torch.bfloat16)
    # Weights to int8 with one scale per output row (a row's largest weight sets its own scale, so one large
    # row does not coarsen the others); activations quantized on the fly, each row with its own range
    # (`Int8Linear`). The decoding steps run these layers' int8 products fused (core/model/step.py).
    for module in list(fast.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Linear:
                bias = None if child.bias is None else child.bias.detach()
                setattr(module, name, Int8Linear(int8_weight(child.weight.detach()), bias))
    return fast


def int8_weight(weight: torch.Tensor) -> torch.Tensor:
    """W (out, in) as qint8 with one scale per output row, zero points 0: what torch.ao's quantize_dynamic makes of it
    with per_channel_dynamic_qconfig (its observer's rule: scale = max(|min|, |max|) / 127.5, at least fp32's eps,
    min and max widened to hold 0) — the same int8 values and scales (tests hold them equal), without its module
    conversion and fbgemm packing, ~0.4 s of every cold int8 command."""
    w = weight.float()
    zero = torch.zeros((), dtype=w.dtype)
    top = torch.maximum(-torch.minimum(w.amin(1), zero), torch.maximum(w.amax(1), zero))
    scale = torch.clamp_min(top / ((127 - -128) / 2), torch.finfo(torch.float32).eps)
    with warnings.catch_warnings():  # torch.ao's quantized tensors announce their move to torchao
        warnings.simplefilter("ignore")
        return torch.quantize_per_channel(w, scale.double(), torch.zeros(w.size(0), dtype=torch.long), 0, torch.qint8)


# A row of activations whose largest |value| is below this is quantized as zeros (no division by zero).
_TINY = 1e-30
# fbgemm's reduced range: activations over 7 bits, since without AVX-512 VNNI its 8-bit products can saturate
# (scripts/int8_ablation.py turns it off to measure what the eighth bit would give).
REDUCE_RANGE = True


def int8_rows(x: torch.Tensor, params, unbiased, bias: torch.Tensor | None) -> torch.Tensor:
    """x Wᵀ + b for (N, in) fp32 rows on int8 weights (`params`: W and b prepacked for fbgemm; `unbiased`: W
    alone), each row's activations quantized to int8 with its own range.

    fbgemm's dynamic product quantizes its whole input with one range. In a batch that range is the widest
    row's, so every other sentence's (and beam's) activations lose bits, and a sentence's numbers depend on the
    batch it sits in (docs/precision.md, beam 4: fr→en Tatoeba −0.56 and en→fr FLORES dev −0.40 BLEU below fp32
    with one range a call, +0.06 and −0.09 with a range per row). So rows > 1 are first divided by their largest
    |value| (each row then spans about [−1, 1]), multiplied back after the product, and the bias added then: five
    small operations more. One row is already its own range.
    fbgemm's reduced range (7-bit activations, `REDUCE_RANGE`) stays. Where core/model/native is built the layers
    compute this in C instead (`c_rows`): the same numbers in one call; this stays the path without it."""
    if x.size(0) == 1:
        return torch.ops.quantized.linear_dynamic(x, params, REDUCE_RANGE)
    # abs + amax: 17× faster than vector_norm(x, inf) here (128 × 2048 rows, 1 thread: 40 against 690 µs)
    scale = x.abs().amax(1, keepdim=True).clamp_min_(_TINY)  # (N, 1)
    y = torch.ops.quantized.linear_dynamic(x / scale, unbiased, REDUCE_RANGE)
    return y.mul_(scale) if bias is None else torch.addcmul(bias, y, scale)


def c_rows(int_repr: torch.Tensor, scales: torch.Tensor, bias: torch.Tensor | None) -> native.Rows | None:
    """The product `int8_rows` computes, through core/model/native's C (`native.Rows`: the same numbers, one pass
    around the sums where int8_rows makes five torch operations around fbgemm's call), or None where there is no
    library (TT_NATIVE=0, no compiler). int_repr: W's int8 values (out, in); scales: fp32 per output row."""
    if native.library() is None:
        return None
    return native.Rows(("int8-rows", int_repr, scales, bias))


def c_takes(c: native.Rows | None, rows: int) -> bool:
    """Whether `c` (`c_rows`'s) computes these rows: not under TT_NATIVE=0 (read each call: tests and benches switch
    it), to fbgemm's 7 bits only (REDUCE_RANGE; the 8-bit ablation stays on fbgemm), and many rows only where measured
    faster (`native.Rows.takes`)."""
    return c is not None and native.enabled() and REDUCE_RANGE and c.takes(rows)


# A few rows through a small int8 weight: fbgemm's dynamic product costs ~20 µs a call on an Intel Xeon however
# small (choosing the rows' range, quantizing, packing, the product, scaling back), where MKL's fp32 product of the
# same int8 weights, dequantized once, takes 6–17 µs for up to 4–8 rows of this model's 256 × 256 and 256 × 768
# weights; fbgemm stays ahead from W_1's 256 × 2048 up at any row count (bench/README.md, *A few rows of a small
# int8 weight in fp32*). So a product of at most SMALL_ROWS rows through a weight of fewer than SMALL_WEIGHT
# entries (its fp32 copy, < 2 MB, fits in a core's L2) multiplies the int8 weight's values in fp32: the same
# int8 weights, the activations unrounded — a step of one sentence (greedy: 1 row; beam 4: 4 rows), the last
# rows of a batch. A stacked product takes it where each layer it stacks does, so the two decide alike.
SMALL_ROWS = 8
SMALL_WEIGHT = 1 << 19
# None: where the CPU is Intel's (`small_in_fp32`); True / False force it (tests, bench/bench_int8_small.py).
SMALL_IN_FP32: bool | None = None


def small_in_fp32() -> bool:
    """Whether few rows through a small int8 weight are multiplied in fp32 (`SMALL_ROWS`): on Intel CPUs, where
    it was measured to pay. On the AMD Zen 5 fbgemm's one-row int8 products were fast (int8 batch 1 at 1.4–1.6×
    tt's fp32 there, bench/README.md), so they stay there until measured otherwise."""
    if SMALL_IN_FP32 is not None:
        return SMALL_IN_FP32
    from core.device import cpu_vendor

    return cpu_vendor() == "GenuineIntel"


# Many rows through an int8 weight, on a CPU with AMX's bf16 tiles: oneDNN's bf16 product on the int8 weights times
# their rows' scales (each rounded to bf16: within a quarter of its int8 step, |q| ≤ 127), packed once, the bias
# added inside the product — the activations rounded to bf16 (8 significant bits) instead of quantized to 7 bits over
# each row's range. From MANY_ROWS rows it was 1.2–2.3× faster than fbgemm's per-row int8 product for this model's
# shapes, and 4–6× closer to the exact product of the int8 weights (bench/README.md, *Many rows of the int8 model in
# bf16 on AMX*); below, fbgemm's is as fast or faster. The scales folded into the weights, rather than applied to the
# bf16 sums after in fp32, save a mixed-dtype pass over every output (20–25 % of the path's time at 64 rows): greedy
# 1.07–1.17× and beam 4 1.13–1.46× faster in batches of 64 (*Scales folded into the bf16 weights*).
MANY_ROWS = 32
# None: where the CPU has AMX's bf16 tiles (`many_rows_bf16`); True / False force it (tests, benches).
MANY_ROWS_BF16: bool | None = None


def onednn_bf16() -> bool:
    """Whether oneDNN runs bf16 products here: AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT, within ONEDNN_MAX_CPU_ISA."""
    return packing_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()


def many_rows_bf16() -> bool:
    """Whether many rows through an int8 weight go to oneDNN's bf16 product on its values (`MANY_ROWS`): where the
    CPU has AMX's bf16 tiles (where it was measured to pay) and oneDNN may use them — ONEDNN_MAX_CPU_ISA=AVX2 on
    such a CPU withholds its bf16 products, which then refuse to run."""
    if MANY_ROWS_BF16 is not None:
        return MANY_ROWS_BF16
    from core.device import cpu_capabilities

    return bool(cpu_capabilities().get("amx_bf16")) and onednn_bf16()


class ManyRowsBf16:
    """x Wᵀ + b for (N, in) fp32 rows on int8 weights with one scale per output row (`MANY_ROWS`): oneDNN's bf16
    product of the rows, rounded to bf16, and the int8 values times their rows' scales in bf16, packed once on first
    use; the bias (fp32) added inside the product, the sums rounded to bf16 and returned in fp32.
    `after` (out,), where given, multiplies the outputs in fp32: a stacked product's factor that is not a power of
    two (1/√d_k for d_k = 8), which folded into the bf16 weights would round them apart from the layer's own."""

    def __init__(
        self,
        int_repr: torch.Tensor,
        row_scales: torch.Tensor,
        bias: torch.Tensor | None,
        after: torch.Tensor | None = None,
    ) -> None:
        self._int_repr = int_repr  # (out, in) int8, the layer's own
        self.scales = row_scales.float()  # (out,)
        self.bias = torch.zeros(int_repr.size(0)) if bias is None else bias.detach().float()
        self.after = None if after is None else after.float()  # (out,)
        self._packed: torch.Tensor | None = None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self._packed is None:  # the weights in bf16, in oneDNN's layout: the only bf16 copy kept
            weight = (self._int_repr.float() * self.scales[:, None]).to(torch.bfloat16)  # (out, in)
            self._packed = torch.ops.mkldnn._reorder_linear_weight(weight, 64)
        y = onednn_linear(x.to(torch.bfloat16), self._packed, self.bias).float()  # (N, out)
        return y if self.after is None else y.mul_(self.after)


def takes_small_rows(weight: torch.Tensor) -> bool:
    """Whether few rows through this (out, in) weight are multiplied in fp32 (`SMALL_ROWS`)."""
    return weight.size(0) * weight.size(1) < SMALL_WEIGHT and small_in_fp32()


def dequantized_t(weight: torch.Tensor) -> torch.Tensor:
    """Wᵀ (in, out) in fp32 from a qint8 weight's own values (int8 × its row's scale), for `SMALL_ROWS`."""
    return weight.dequantize().t().contiguous()  # (in, out)


class Int8Linear(nn.Module):
    """An nn.Linear for inference on int8 weights, one scale per output row and zero points of 0 (what
    `fast_model(model, "int8")` makes of each Linear layer): its input rows are quantized one by one
    (`int8_rows`, computed in C where core/model/native is built: `c_rows`); up to SMALL_ROWS rows through a small
    weight multiply its int8 values in fp32 (`dequantized_t`), and on a CPU with AMX MANY_ROWS rows or more multiply
    them in bf16 (`ManyRowsBf16`). `weight()` and `bias()` read as torch.ao's dynamic Linear's do."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, *, small: bool = True) -> None:
        super().__init__()
        if weight.dtype != torch.qint8 or bool(int8_scales(weight)[1].any()):
            raise ValueError("Int8Linear takes qint8 weights with zero points of 0")
        self.in_features, self.out_features = weight.size(1), weight.size(0)
        self._weight, self._bias = weight, None if bias is None else bias.detach()
        self._packed: tuple | None = None  # fbgemm's, made on first use (`packed`)
        # The fp32 copy for few rows (`dequantized_t`), made on the first such call: the fused step, which decodes,
        # keeps its own (`Int8Product`), so a model that only decodes never holds this one.
        self.small = small and takes_small_rows(weight)
        self._small_t: torch.Tensor | None = None
        # Many rows on AMX in bf16 (`MANY_ROWS`), made on the first such call.
        self.many = small and many_rows_bf16()
        self._many: ManyRowsBf16 | None = None
        # core/model/native's product of any number of rows (`c_rows`), made on the first call that has the library.
        self._c: native.Rows | None = None

    @property
    def packed(self) -> tuple:
        """`int8_rows`'s arguments after x: W and b prepacked for fbgemm, W alone, b — made on the first call that
        needs fbgemm (where core/model/native computes the products, never: ~3 ms a layer of every cold command)."""
        if self._packed is None:
            with warnings.catch_warnings():  # torch.ao's quantized tensors announce their move to torchao
                warnings.simplefilter("ignore")
                self._packed = (
                    torch.ops.quantized.linear_prepack(self._weight, self._bias),
                    torch.ops.quantized.linear_prepack(self._weight, None),
                    self._bias,
                )
        return self._packed

    def weight(self) -> torch.Tensor:
        return self._weight

    def bias(self) -> torch.Tensor | None:
        return self._bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)
        if flat.dtype != torch.float32:
            flat = flat.float()
        if self.small and flat.size(0) <= SMALL_ROWS:
            if self._small_t is None:
                self._small_t = dequantized_t(self._weight)  # (in, out)
            w_t = self._small_t
            y = torch.mm(flat, w_t) if self._bias is None else torch.addmm(self._bias, flat, w_t)
            return y.view(*x.shape[:-1], -1)
        if self.many and flat.size(0) >= MANY_ROWS:
            if self._many is None:
                self._many = ManyRowsBf16(self._weight.int_repr(), int8_scales(self._weight)[0], self._bias)
            return self._many(flat).view(*x.shape[:-1], -1)
        c = self.c_product()
        if c_takes(c, flat.size(0)):
            return c(flat).view(*x.shape[:-1], -1)
        return int8_rows(flat.contiguous(), *self.packed).view(*x.shape[:-1], -1)

    def c_product(self) -> native.Rows | None:
        """`c_rows` of this layer, made on the first call that has the library."""
        if self._c is None:
            self._c = c_rows(self._weight.int_repr(), int8_scales(self._weight)[0].float(), self._bias)
        return self._c

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self._bias is not None}, int8"


def linear_kind(layer: nn.Module) -> str | None:
    """ "plain" (fp32 nn.Linear), "packed" (PackedLinear), "int8" (fast_model's, zero points 0), or None: a
    layer the fused path has no product for (bf16)."""
    if type(layer) is nn.Linear:
        return "plain" if layer.weight.dtype == torch.float32 else None
    if type(layer) is PackedLinear:
        return "packed"
    if type(layer) is Int8Linear:  # fast_model(model, "int8")
        return "int8"
    return None


def int8_scales(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A quantized weight's scale and zero point per output row (a per-tensor one repeated)."""
    if weight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
        return weight.q_per_channel_scales().double(), weight.q_per_channel_zero_points()
    rows = weight.size(0)
    return torch.full((rows,), weight.q_scale(), dtype=torch.float64), torch.full((rows,), weight.q_zero_point())


# A one-row product split across cores needs outputs to split; below this the split's own cost wins.
ONE_ROW_MIN_OUT = 256


class Product:
    """x Wᵀ + b for the step's (N, in) rows, on a frozen copy of the weight (where inputs outnumber outputs, one
    row reads the weight itself: the step is rebuilt when a weight changes, core/model/step.py `_weights_key`).

    `scale` multiplies weight and bias (1/√d_k folded into W^Q). Products of two rows or more go to oneDNN
    on a packed copy when `packed`; one row (`one_row`), and everything off the CPU, to `addmm` on Wᵀ.
    """

    def __init__(
        self, weight: torch.Tensor, bias: torch.Tensor | None, *, packed: nn.Module | bool, scale: float = 1.0
    ) -> None:
        weight = weight.detach() * scale if scale != 1.0 else weight.detach()
        bias = None if bias is None else bias.detach() * scale if scale != 1.0 else bias.detach()
        self.weight_t, self.bias = weight.t().contiguous(), bias  # (in, out), (out,)
        self.in_features, self.out_features = weight.size(1), weight.size(0)
        self.packed: nn.Module | None = None
        if isinstance(packed, PackedLinear) and scale == 1.0:
            self.packed = packed  # the model's own layer: one packed copy, made once, for both paths
        elif packed and weight.device.type == "cpu":
            linear = nn.Linear(self.in_features, self.out_features, bias=bias is not None, device=weight.device)
            linear.weight = nn.Parameter(weight, requires_grad=False)
            if bias is not None:
                linear.bias = nn.Parameter(bias, requires_grad=False)
            self.packed = PackedLinear(linear)  # packs on first use: a single sentence's steps never do
        # Two rows or more go to oneDNN whatever their size (not PackedLinear's PACK_MIN_MACS): on Zen 5, for 2–7
        # rows of this model's shapes, 1.7–3.5× faster than MKL's addmm at 2 threads, 1.3–2.6× at 1, weights in
        # cache or not (bench/README.md, *A few rows on oneDNN*) — a short sentence's encoder and the last
        # rows of a batch. One row never goes there: `one_row`'s layouts read the weight as fast or faster.
        self.on_cpu = weight.device.type == "cpu"
        # One row's Wᵀ (in, out): a one-row product with more inputs than outputs (the FFN's W_2) reads W row by
        # row, one dot product per output (transposed, a view of W: no copy); the others read the contiguous Wᵀ,
        # each input's weights added into the row. Measured on Zen 5 at 1 and 2 threads, every in > out shape
        # was 1.0–2.3× faster as dot products, every in ≤ out shape as good or better on Wᵀ (bench/README.md,
        # *Each product in its layout*).
        self.one_row_t = weight.t() if self.in_features > self.out_features else self.weight_t  # (in, out)
        # threads → one row's Wᵀ and the bias in that many blocks of outputs (one_row)
        self._blocks: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = {}

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows, weight_t = x.size(0), self.weight_t
        if rows == 1 and self.on_cpu:
            threads = torch.get_num_threads()
            if threads > 1 and self.out_features % threads == 0 and self.out_features >= ONE_ROW_MIN_OUT:
                return self.one_row(x, threads)
            weight_t = self.one_row_t
        elif self.packed is not None and rows > 1:
            # Straight to oneDNN: the step's rows are 2-D fp32 on the CPU, and no hook is registered on the
            # fused path, so the module call and its checks (~15 µs, 20 times a step) are skipped.
            return onednn_linear(x, self.packed.packed(), self.bias)
        if self.bias is None:
            return torch.mm(x, weight_t)
        return torch.addmm(self.bias, x, weight_t)  # (N, out)

    def one_row(self, x: torch.Tensor, threads: int) -> torch.Tensor:
        """x Wᵀ + b for one row on `threads` cores. A one-row product reads the whole weight for a few
        multiply-adds each, so its time is the time to read the weight, and torch computes it on one thread
        whatever torch.get_num_threads() says (MKL's one-row gemm). The outputs cut into `threads` blocks, one
        bmm reads a block of the weight on each core: 1.3–3× faster at 2 threads for this model's products
        (bench/README.md, *One row on every core* and *Each product in its layout*), each output the same dot
        product plus its bias, as addmm computes it. Block j's outputs are [j·out/threads, (j+1)·out/threads),
        so the (threads, 1, out/threads) result is already the row in order: three operations (expand,
        baddbmm, view) and no copy. Each block keeps `one_row_t`'s layout: W's rows as they are (a view), or
        Wᵀ's columns copied into contiguous blocks."""
        blocks = self._blocks.get(threads)
        if blocks is None:  # the weight and the bias in `threads` blocks, made once per thread count
            weight = self.one_row_t.view(self.in_features, threads, -1).permute(1, 0, 2)  # (threads, in, out/threads)
            if self.one_row_t is self.weight_t:
                weight = weight.contiguous()  # each block's columns together
            bias = None if self.bias is None else self.bias.view(threads, 1, -1)
            blocks = self._blocks[threads] = (weight, bias)  # (threads, in, out/threads), (threads, 1, out/threads)
        weight, bias = blocks
        x = x.expand(threads, 1, self.in_features)
        y = torch.bmm(x, weight) if bias is None else torch.baddbmm(bias, x, weight)  # (threads, 1, out/threads)
        return y.view(1, self.out_features)


class Int8Product:
    """x Wᵀ + b for the step's (N, in) rows on int8 weights with one scale per output row (`--quantize int8`):
    the rows of one or more of the model's `Int8Linear` layers, stacked as their fp32 weights are on the other
    paths. Each input row is quantized with its own range, as the layers themselves do it (`int8_rows`), so a
    stacked product gives each layer's own outputs; up to SMALL_ROWS rows through a small weight are multiplied in
    fp32 on the int8 weight's values (`small`, a `Product`: one row split across cores as fp32's is), and MANY_ROWS
    rows or more in bf16 on them where the CPU has AMX (`many`), as the layers do it too. `weight_t` and `bias` are
    then the small product's, so one sentence's cross-attention can absorb W^Q and W^O as the fp32 path does
    (core/model/step.py); None where the product stays int8.
    `scale` multiplies a part's weight scales and bias (1/√d_k folded into W^Q: a power of two, so exact).
    """

    def __init__(self, parts: list[tuple[nn.Module, float]]) -> None:
        ints, own_scales, own_biases, factors = [], [], [], []  # each layer's own, and its `scale` per output row
        for linear, scale in parts:
            weight, bias = linear.weight(), linear.bias()  # zero points are 0 (linear_kind checked)
            ints.append(weight.int_repr())
            own_scales.append(int8_scales(weight)[0])  # float64
            own_biases.append(torch.zeros(weight.size(0)) if bias is None else bias.detach())
            factors.append(torch.full((weight.size(0),), scale, dtype=torch.float64))
        int_repr, own_scale, own_bias, factor = (torch.cat(t) for t in (ints, own_scales, own_biases, factors))
        row_scales, bias = own_scale * factor, own_bias * factor.float()  # (out,) float64, (out,) fp32
        self.in_features, self.out_features = int_repr.size(1), int_repr.size(0)
        with warnings.catch_warnings():  # torch.ao's quantized tensors announce their move to torchao
            warnings.simplefilter("ignore")
            weight = torch._make_per_channel_quantized_tensor(
                int_repr, row_scales, torch.zeros_like(row_scales, dtype=torch.long), 0
            )
        self._stacked = Int8Linear(weight, bias, small=False)  # the stacked layer: its fbgemm packing and C product
        # The int8 values, their scales per output row and the bias, as core/model/native's one-row step reads them.
        self.int8 = (int_repr, row_scales.float(), bias)
        # Few rows in fp32 where every stacked layer takes them so (`takes_small_rows`), as the layers decide.
        small = all(takes_small_rows(linear.weight()) for linear, _ in parts)
        self.small = Product(dequantized_t(weight).t(), bias, packed=False) if small else None
        self.weight_t = None if self.small is None else self.small.weight_t
        self.bias = None if self.small is None else self.small.bias
        self.many = None
        if many_rows_bf16():
            # A power of two multiplies bf16 values exactly: folded in. Another factor multiplies the outputs after,
            # so each stacked layer's weights round to bf16 as the layer's own do.
            if all(math.frexp(scale)[0] == 0.5 for _, scale in parts):
                self.many = ManyRowsBf16(int_repr, row_scales, bias)
            else:
                self.many = ManyRowsBf16(int_repr, own_scale, own_bias, after=factor)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.size(0)
        if self.small is not None and rows <= SMALL_ROWS:
            return self.small(x)  # (N, out)
        if self.many is not None and rows >= MANY_ROWS:
            return self.many(x)  # (N, out)
        c = self.c_product()
        if c_takes(c, rows):
            return c(x)  # (N, out)
        return int8_rows(x, *self.packed)  # (N, out)

    @property
    def packed(self) -> tuple:
        """`int8_rows`'s arguments for the stacked layer (fbgemm's packing, made on first use)."""
        return self._stacked.packed

    def c_product(self) -> native.Rows | None:
        """The stacked layer's `c_rows` (the C step reads its packed weights too)."""
        return self._stacked.c_product()


def stacked_product(parts: list[tuple[nn.Module, float]], kind: str) -> Product | Int8Product:
    """One product for the rows of the model layers `parts` ((layer, scale), stacked in order). A single
    layer of a packed model lends its own packed copy."""
    if kind == "int8":
        return Int8Product(parts)
    packed = kind == "packed"
    if len(parts) == 1:
        linear, scale = parts[0]
        return Product(linear.weight, linear.bias, packed=linear if packed else False, scale=scale)
    weight = torch.cat([linear.weight * scale for linear, scale in parts])
    bias = torch.cat([linear.bias * scale for linear, scale in parts])
    return Product(weight, bias, packed=packed)
