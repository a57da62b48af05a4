"""Which kernel computes each of the model's products fastest on the CPU at hand, side by side in one run.

- fp32: MKL (torch.addmm on Wᵀ, torch's default) against oneDNN on a weight packed for it (`packed_model`;
  `packing_pays` packs except on an Intel CPU);
- int8 (one scale per output row, activations quantized on the fly, reduce range as tt runs it): fbgemm's
  dynamic product (tt's) against oneDNN's, which uses AMX where the CPU has it. Faster here on its own for
  large products on an Intel Xeon with AMX, it did not make decoding faster there (bench/README.md, *Packing
  only where it pays; oneDNN's int8 tried*), so tt stays on fbgemm: this column is the measurement to repeat
  on another CPU.

Shapes: the shipped model's (d_model 256, d_ff 2048, vocabulary 8010): the self-attention's Q K V stacked, W^O,
W_1, W_2 and the generator, for 1 to 256 rows (a batch-1 step has 1, beam 4 has 4, a batch of 64 sentences 64,
beam 4 over 64 sentences 256). Each pair is checked to agree before it is timed; best of `--repeat` runs of
`--calls` calls each, in µs a call (int8: both kernels' errors against the exact product of the rounded weights
within 5 % of each other). The ratios are the first kernel's time over the second's (> 1: the second,
the alternative, is faster).

    python bench/bench_kernels.py --threads 1
    python bench/bench_kernels.py --threads 1 --mkl-packed   # and MKL's packed sgemm (torch.ops.mkl._mkl_linear)

`--mkl-packed` adds MKL's own packed fp32 product (cblas_sgemm_pack, what inductor's CPU freezing uses): the
weight packed for these rows, and the same packed weight given one row more. torch runs the packed product only
for the row count the weight was packed for and falls back to the plain one for any other, so in decoding, where
the rows change from step to step (sentences finish, the encoder's rows are the source's pieces), it would pay
only for the one row count packed (bench/README.md, *MKL's packed products*).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.device import describe_cpu  # noqa: E402
from core.model import fast  # noqa: E402

SHAPES = {"QKV": (768, 256), "W^O": (256, 256), "W_1": (2048, 256), "W_2": (256, 2048), "generator": (8010, 256)}


def prepack_onednn(weight: torch.Tensor):
    """A qint8 weight prepacked for oneDNN's int8 products (the packed object, not the global engine, picks the
    kernel at each call: the engine is switched for the prepack only)."""
    engine = torch.backends.quantized.engine
    torch.backends.quantized.engine = "onednn"
    try:
        return torch.ops.quantized.linear_prepack(weight, None)
    finally:
        torch.backends.quantized.engine = engine


def best_us(call, calls: int, repeat: int) -> float:
    for _ in range(10):
        call()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rows", default="1,2,4,8,16,32,64,256")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--mkl-packed", action="store_true", help="also MKL's packed sgemm, packed for the rows and not"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # torch.ao's quantized ops announce their move to torchao
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"CPU: {describe_cpu()}; threads {args.threads}; torch {torch.__version__}; packing_pays {fast.packing_pays()}"
    )
    mkl = " MKL packed for the rows µs | MKL / packed | rows + 1, packed for the rows µs | MKL / that |"
    print(
        "| product | rows | MACs | fp32 MKL µs | fp32 oneDNN packed µs | MKL / oneDNN | int8 fbgemm µs | int8 oneDNN µs | fbgemm / oneDNN |"
        + (mkl if args.mkl_packed else "")
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" * 4 if args.mkl_packed else ""))
    for rows in map(int, args.rows.split(",")):
        for name, (out_f, in_f) in SHAPES.items():
            weight, bias = torch.randn(out_f, in_f) * 0.05, torch.randn(out_f)
            x = torch.randn(rows, in_f) * torch.rand(rows, 1) * 3
            weight_t = weight.t().contiguous()
            packed = torch.ops.mkldnn._reorder_linear_weight(weight, rows)
            fp32 = torch.addmm(bias, x, weight_t)
            onednn_fp32 = fast.onednn_linear(x, packed, bias)
            assert torch.allclose(fp32, onednn_fp32, atol=1e-4), name
            scales = weight.abs().amax(1).double() / 127
            qweight = torch.quantize_per_channel(weight, scales, torch.zeros(out_f, dtype=torch.long), 0, torch.qint8)
            by_fbgemm = torch.ops.quantized.linear_prepack(qweight, None)
            by_onednn = prepack_onednn(qweight)
            # the same product up to rare rounding ties in quantizing the activations (a row here and there)
            exact = x @ qweight.dequantize().t()
            errors = [
                (torch.ops.quantized.linear_dynamic(x, packed_w, fast.REDUCE_RANGE) - exact).norm() / exact.norm()
                for packed_w in (by_fbgemm, by_onednn)
            ]
            assert abs(errors[0] - errors[1]) <= 0.05 * errors[0], (name, errors)
            times = [
                best_us(lambda: torch.addmm(bias, x, weight_t), args.calls, args.repeat),
                best_us(lambda: fast.onednn_linear(x, packed, bias), args.calls, args.repeat),
                best_us(
                    lambda: torch.ops.quantized.linear_dynamic(x, by_fbgemm, fast.REDUCE_RANGE), args.calls, args.repeat
                ),
                best_us(
                    lambda: torch.ops.quantized.linear_dynamic(x, by_onednn, fast.REDUCE_RANGE), args.calls, args.repeat
                ),
            ]
            extra = ""
            if args.mkl_packed:
                extra = mkl_packed_columns(x, weight, bias, weight_t, times[0], args.calls, args.repeat)
            print(
                f"| {name} | {rows} | {rows * in_f * out_f / 1e6:.1f}M | {times[0]:.1f} | {times[1]:.1f} | "
                f"{times[0] / times[1]:.2f} | {times[2]:.1f} | {times[3]:.1f} | {times[2] / times[3]:.2f} |{extra}",
                flush=True,
            )


def mkl_packed_columns(x, weight, bias, weight_t, mkl_us: float, calls: int, repeat: int) -> str:
    """MKL's packed product for `x`'s rows, and for one row more on the same packed weight (torch falls back to
    the plain product there), each checked against addmm, as table cells."""
    rows = x.size(0)
    packed = torch.ops.mkl._mkl_reorder_linear_weight(weight, rows)
    more = torch.cat([x, x[:1]])
    more_t = torch.addmm(bias, more, weight_t)
    assert torch.allclose(
        torch.ops.mkl._mkl_linear(x, packed, weight, bias, rows), torch.addmm(bias, x, weight_t), atol=1e-4
    )
    assert torch.allclose(torch.ops.mkl._mkl_linear(more, packed, weight, bias, rows), more_t, atol=1e-4)
    exact = best_us(lambda: torch.ops.mkl._mkl_linear(x, packed, weight, bias, rows), calls, repeat)
    other = best_us(lambda: torch.ops.mkl._mkl_linear(more, packed, weight, bias, rows), calls, repeat)
    plain_more = best_us(lambda: torch.addmm(bias, more, weight_t), calls, repeat)
    return f" {exact:.1f} | {mkl_us / exact:.2f} | {other:.1f} | {plain_more / other:.2f} |"


if __name__ == "__main__":
    main()
