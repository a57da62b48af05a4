"""The notes' cost claims, timed on the machine at hand (measured seconds, never asserted in tests).

"8 heads are 8× cheaper than one" and "attention is O(N²)": each returns a `Claim` whose figure names
the CPU, as bench tables do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch

from core.analysis.verdict import DEPENDS, FAILS, HOLDS, Claim, slope
from core.model.attention import MultiHeadAttention, scaled_dot_product_attention

QUADRATIC_SLOPE = 1.7  # log time against log N at the largest lengths


def _time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: allocation, kernel choice
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@torch.inference_mode()
def multihead_cost(d_model: int, h: int, length: int = 64, repeats: int = 5) -> Claim:
    x = torch.randn(1, length, d_model)
    times = {}
    for heads in (h, 1):
        mha = MultiHeadAttention(d_model, heads).eval()
        times[heads] = _time(lambda m=mha: m(x, need_weights=True), repeats)
    ratio = times[1] / times[h]
    # Q Kᵀ costs h · T² · d_k = T² · d_model multiply-adds whatever h is; the projections are identical.
    verdict = FAILS if ratio < 2 else HOLDS
    return Claim(
        "multihead_cost",
        f"{h} heads of d_k = {d_model // h} are about {h}× cheaper than one head of d_model",
        "001 (Computational & memory efficiency)",
        f"one attention sub-layer, T = {length}: {times[h] * 1e3:.2f} ms with {h} heads, {times[1] * 1e3:.2f} ms with one "
        f"(ratio {ratio:.2f}, {cpu_name()}); Q Kᵀ is T²·d_model multiply-adds either way",
        verdict,
        "splitting d_model into heads divides the work per head, not the total",
        {"seconds": {str(k): v for k, v in times.items()}, "ratio": ratio, "length": length, "cpu": cpu_name()},
    )


@torch.inference_mode()
def attention_quadratic(model, lengths: Sequence[int] = (64, 128, 256, 512, 1024), repeats: int = 3) -> Claim:
    cfg = model.cfg
    layer = model.encoder_layers[0]
    core_t, layer_t = {}, {}
    for n in lengths:
        q = torch.randn(1, cfg.h, n, cfg.d_k)
        x = torch.randn(1, n, cfg.d_model)
        mask = torch.ones(1, 1, 1, n, dtype=torch.bool)
        core_t[n] = _time(lambda q=q: scaled_dot_product_attention(q, q, q), repeats)
        layer_t[n] = _time(lambda x=x, m=mask: layer(x, src_mask=m), repeats)
    tail = list(lengths)[-3:]
    s_core = slope(tail, [core_t[n] for n in tail])
    s_layer = slope(list(lengths)[:3], [layer_t[n] for n in list(lengths)[:3]])
    verdict = FAILS if s_core < QUADRATIC_SLOPE else HOLDS if s_layer >= QUADRATIC_SLOPE else DEPENDS
    return Claim(
        "attention_quadratic",
        "self-attention costs O(N²) in the sentence length",
        "001 (Quadratic complexity)",
        f"softmax(QKᵀ/√d_k)V time ∝ N^{s_core:.2f} for N = {tail[0]}–{tail[-1]}; a whole encoder layer ∝ N^{s_layer:.2f} "
        f"for N = {lengths[0]}–{lengths[2]} ({cpu_name()})",
        verdict,
        "the attention core is quadratic; at sentence lengths the linear layers dominate a layer's time",
        {
            "core_seconds": {str(n): t for n, t in core_t.items()},
            "layer_seconds": {str(n): t for n, t in layer_t.items()},
            "core_slope": s_core,
            "layer_slope": s_layer,
            "cpu": cpu_name(),
        },
    )


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()
