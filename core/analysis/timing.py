"""The notes' cost claims, decided by counting the work; wall-clock on the machine at hand shown beside.

"8 heads are 8× cheaper than one" and "attention is O(N²)": each returns a `Claim` whose verdict comes
from multiply-adds counted while the operation runs (torch's FlopCounterMode) and from the bytes of the
attention matrix it returns — the same on every machine and every run. Measured seconds (naming the CPU,
as bench tables do) sit beside the counts, never deciding and never asserted in tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from torch.utils.flop_counter import FlopCounterMode

from core.analysis.verdict import DEPENDS, FAILS, HOLDS, Claim, slope
from core.device import _cpuinfo
from core.model.attention import MultiHeadAttention, scaled_dot_product_attention

QUADRATIC_SLOPE = 1.7  # log (counted multiply-adds) against log N: 2 is quadratic, 1 linear
CHEAPER = 2.0  # one head of d_model must cost this many times h heads' multiply-adds for "cheaper" to hold


def count_macs(fn: Callable[[], object]) -> tuple[int, object]:
    """The multiply-adds of the matrix products `fn` runs, counted as it runs, and what it returned."""
    with FlopCounterMode(display=False) as counter:
        out = fn()
    return counter.get_total_flops() // 2, out  # a multiply-add is two flops


@torch.inference_mode()
def encoder_layer_macs(cfg, n: int) -> int:
    """The multiply-adds of one encoder layer of `cfg` on N = n pieces, counted on a fresh layer of the same
    shapes (the work does not depend on the weights' values, and a packed or quantised copy of a loaded model
    runs kernels the counter cannot see); the manual attention path, the same products as the fused one."""
    from core.model.transformer import EncoderLayer

    layer = EncoderLayer(cfg).eval()
    x = torch.zeros(1, n, cfg.d_model)
    mask = torch.ones(1, 1, 1, n, dtype=torch.bool)
    macs, _ = count_macs(lambda: layer(x, src_mask=mask, need_weights=True))
    return macs


def _time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: allocation, kernel choice
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@torch.inference_mode()
def multihead_cost(d_model: int, h: int, length: int = 64, repeats: int = 5, *, timed: bool = True) -> Claim:
    x = torch.randn(1, length, d_model)
    macs, times = {}, {}
    for heads in (h, 1):
        mha = MultiHeadAttention(d_model, heads).eval()
        macs[heads], _ = count_macs(lambda m=mha: m(x, need_weights=True))
        if timed:
            times[heads] = _time(lambda m=mha: m(x, need_weights=True), repeats)
    ratio = macs[1] / macs[h]
    # Q Kᵀ costs h · T² · d_k = T² · d_model multiply-adds whatever h is; the projections are identical.
    verdict = HOLDS if ratio >= CHEAPER else FAILS
    clock = (
        f"; wall-clock beside, not deciding: {times[h] * 1e3:.2f} ms with {h} heads, {times[1] * 1e3:.2f} ms with one "
        f"({cpu_name()})"
        if timed
        else ""
    )
    return Claim(
        "multihead_cost",
        f"{h} heads of d_k = {d_model // h} are about {h}× cheaper than one head of d_model",
        "001 (Computational & memory efficiency)",
        f"one attention sub-layer, T = {length}: {macs[h]:,} multiply-adds with {h} heads, {macs[1]:,} with one "
        f"(ratio {ratio:.2f}){clock}",
        verdict,
        "counted: splitting d_model into heads divides the work per head, not the total (Q Kᵀ is T²·d_model either way)",
        {
            "macs": {str(k): v for k, v in macs.items()},
            "ratio": ratio,
            "length": length,
            "seconds": {str(k): v for k, v in times.items()},
            "cpu": cpu_name() if timed else None,
        },
    )


@torch.inference_mode()
def attention_quadratic(
    model, lengths: Sequence[int] = (64, 128, 256, 512, 1024), repeats: int = 3, *, timed: bool = True
) -> Claim:
    """Counted: the attention core's multiply-adds and its N×N matrix's bytes, and a whole encoder layer's
    multiply-adds (its manual path, the same products as the fused one), as N grows."""
    cfg = model.cfg
    layer = model.encoder_layers[0]
    core_macs, matrix_bytes, layer_macs, core_t, layer_t = {}, {}, {}, {}, {}
    for n in lengths:
        q = torch.randn(1, cfg.h, n, cfg.d_k)
        x = torch.randn(1, n, cfg.d_model)
        mask = torch.ones(1, 1, 1, n, dtype=torch.bool)
        core_macs[n], (_, weights, _) = count_macs(lambda q=q: scaled_dot_product_attention(q, q, q))
        matrix_bytes[n] = weights.numel() * weights.element_size()  # (1, h, N, N)
        layer_macs[n] = encoder_layer_macs(cfg, n)
        if timed:
            core_t[n] = _time(lambda q=q: scaled_dot_product_attention(q, q, q), repeats)
            layer_t[n] = _time(lambda x=x, m=mask: layer(x, src_mask=m), repeats)
    ns = list(lengths)
    s_core = slope(ns, [core_macs[n] for n in ns])
    s_bytes = slope(ns, [matrix_bytes[n] for n in ns])
    s_layer = slope(ns[:3], [layer_macs[n] for n in ns[:3]])
    # A layer's work is a·N (projections, FFN) + b·N² (Q Kᵀ and the weights times V): two counts give a and b.
    n1, n2 = ns[0], ns[-1]
    b = (layer_macs[n2] / n2 - layer_macs[n1] / n1) / (n2 - n1)
    a = layer_macs[n1] / n1 - b * n1
    crossover = a / b if b > 0 else float("inf")
    verdict = FAILS if s_core < QUADRATIC_SLOPE else HOLDS if s_layer >= QUADRATIC_SLOPE else DEPENDS
    clock = ""
    if timed:
        clock = (
            f"; wall-clock beside, not deciding: core ∝ N^{slope(ns[-3:], [core_t[n] for n in ns[-3:]]):.2f}, "
            f"layer ∝ N^{slope(ns[:3], [layer_t[n] for n in ns[:3]]):.2f} ({cpu_name()})"
        )
    return Claim(
        "attention_quadratic",
        "self-attention costs O(N²) in the sentence length",
        "001 (Quadratic complexity)",
        f"counted for N = {n1}–{n2}: softmax(QKᵀ/√d_k)V multiply-adds ∝ N^{s_core:.2f}, its attention matrix "
        f"∝ N^{s_bytes:.2f} ({matrix_bytes[n1]:,} → {matrix_bytes[n2]:,} bytes); a whole encoder layer ∝ "
        f"N^{s_layer:.2f} for N = {ns[0]}–{ns[2]}, its N² part matching the linear part at N ≈ {crossover:,.0f}{clock}",
        verdict,
        "counted: the attention core is quadratic; at sentence lengths the linear layers dominate a layer's work",
        {
            "core_macs": {str(n): v for n, v in core_macs.items()},
            "matrix_bytes": {str(n): v for n, v in matrix_bytes.items()},
            "layer_macs": {str(n): v for n, v in layer_macs.items()},
            "core_slope": s_core,
            "matrix_slope": s_bytes,
            "layer_slope": s_layer,
            "crossover": crossover,
            "core_seconds": {str(n): t for n, t in core_t.items()},
            "layer_seconds": {str(n): t for n, t in layer_t.items()},
            "cpu": cpu_name() if timed else None,
        },
    )


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo's, through core.device, which reads it once a process), else the
    platform's."""
    name = _cpuinfo("model name")
    if name:
        return name
    import platform

    return platform.processor() or platform.machine()
