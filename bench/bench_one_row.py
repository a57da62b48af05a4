"""One-row products y = x Wᵀ + b (a batch-1 decoding step's GEMVs) in several layouts, at 1 and 2 threads.

The shipped model's shapes (d_model 256, d_ff 2048, vocabulary 8000, 3 decoder layers) are run as a step runs
them: each step calls every decoder layer's Q K V, W^O, W_1, W_2 and then the generator, on distinct weights
(~24 MB, as much as the real step reads), and each call is timed on its own. Layouts:

- addmm:  torch.addmm(b, x, Wᵀ) on one (in, out) Wᵀ — torch runs it on one thread;
- nt:     torch.addmm(b, x, W.t()): W's rows, one dot product per output, on one thread;
- addmv:  torch.addmv(b, W, x) on W (out, in);
- cols:   Wᵀ's columns in one block per thread, baddbmm(b, x, Wᵀ blocks) -> (t, 1, out/t) (Product.one_row
          where in ≤ out);
- rows_t: W's rows in one block per thread, each read transposed (a view, no copy), the same baddbmm: one dot
          product per output, each thread its block of outputs (Product.one_row where in > out);
- rows:   W's row blocks times x as a (in, 1) column, expanded; rows_c: the column copied;
- splitk: each thread half of the inputs, addbmm(b, x halves, Wᵀ row blocks): two partial rows summed;
- onednn: oneDNN's linear on the weight packed for one row.

Each layout's row is checked against addmm's before timing.

    python bench/bench_one_row.py --threads 2 --steps 2000
"""

from __future__ import annotations

import argparse
import time

import torch

SHAPES = {"QKV": (768, 256), "W^O": (256, 256), "W_1": (2048, 256), "W_2": (256, 2048), "generator": (8000, 256)}
LAYERS = 3


class Layouts:
    """One weight (out, in) and its bias in every layout, for `threads` blocks."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, threads: int) -> None:
        n, k = weight.shape
        t = threads
        self.t, self.n, self.k = t, n, k
        self.w, self.b, self.wt = weight, bias, weight.t().contiguous()  # (out, in), (out,), (in, out)
        self.cols = self.wt.view(k, t, n // t).permute(1, 0, 2).contiguous()  # (t, in, out/t)
        self.b_cols = bias.view(t, 1, n // t)
        self.rows = weight.view(t, n // t, k)  # (t, out/t, in): a view
        self.b_rows = bias.view(t, n // t, 1)
        self.split = self.wt.view(t, k // t, n)  # (t, in/t, out): a view
        self.b_split = bias.view(1, n)
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, 1)

    def addmm(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.b, x, self.wt)

    def addmv(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmv(self.b, self.w, x.view(self.k)).view(1, self.n)

    def cols_(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.b_cols, x.expand(self.t, 1, self.k), self.cols).view(1, self.n)

    def rows_(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.b_rows, self.rows, x.view(1, self.k, 1).expand(self.t, self.k, 1)).view(1, self.n)

    def nt(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.b, x, self.w.t())

    def rows_t(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.b_cols, x.expand(self.t, 1, self.k), self.rows.transpose(1, 2)).view(1, self.n)

    def rows_c(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.b_rows, self.rows, x.view(1, self.k, 1).repeat(self.t, 1, 1)).view(1, self.n)

    def onednn(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.b, "none", [], "")

    def splitk(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addbmm(self.b_split, x.view(self.t, 1, self.k // self.t), self.split)


LAYOUTS = {"addmm": Layouts.addmm, "addmv": Layouts.addmv, "cols": Layouts.cols_, "rows": Layouts.rows_}
LAYOUTS.update(splitk=Layouts.splitk, nt=Layouts.nt, rows_t=Layouts.rows_t, rows_c=Layouts.rows_c)
LAYOUTS["onednn"] = Layouts.onednn


def run(threads: int, steps: int, layouts: list[str]) -> dict[tuple[str, str], float]:
    """µs per call for every (shape, layout), the calls of one step in the step's order."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    calls = []  # (shape name, Layouts, x) in a step's order
    for _ in range(LAYERS):
        for name in ("QKV", "W^O", "W_1", "W_2"):
            out, inp = SHAPES[name]
            calls.append(
                (name, Layouts(torch.randn(out, inp) / inp**0.5, torch.randn(out), threads), torch.randn(1, inp))
            )
    out, inp = SHAPES["generator"]
    calls.append(
        ("generator", Layouts(torch.randn(out, inp) / inp**0.5, torch.randn(out), threads), torch.randn(1, inp))
    )
    for name, lay, x in calls:
        for layout in layouts:
            got, want = LAYOUTS[layout](lay, x), lay.addmm(x)
            if not torch.allclose(got, want, atol=1e-4, rtol=1e-5):
                raise SystemExit(f"{layout} differs from addmm on {name}: {(got - want).abs().max():.2e}")
    totals = {(name, layout): 0.0 for name in SHAPES for layout in layouts}
    counts = {name: sum(1 for c in calls if c[0] == name) for name in SHAPES}
    clock = time.perf_counter
    with torch.inference_mode():
        for layout in layouts:  # one layout at a time over the whole step, so the step's bytes are what's read
            fn = LAYOUTS[layout]
            for step in range(steps + 100):
                for name, lay, x in calls:
                    start = clock()
                    fn(lay, x)
                    if step >= 100:  # the first 100 steps warm up
                        totals[name, layout] += clock() - start
    return {key: 1e6 * total / (steps * counts[key[0]]) for key, total in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    args = parser.parse_args()
    layouts = args.layouts.split(",")
    result = run(args.threads, args.steps, layouts)
    print(f"threads {args.threads}, {args.steps} steps, µs per call (the step's calls in order, distinct weights)")
    print("| product (out × in) | " + " | ".join(layouts) + " |")
    print("|---|" + "---:|" * len(layouts))
    for name, (out, inp) in SHAPES.items():
        print(f"| {name} {out}×{inp} | " + " | ".join(f"{result[name, lay]:.1f}" for lay in layouts) + " |")
    step = {lay: sum(result[name, lay] * (1 if name == "generator" else LAYERS) for name in SHAPES) for lay in layouts}
    print("| a step's products | " + " | ".join(f"{step[lay]:.0f}" for lay in layouts) + " |")


if __name__ == "__main__":
    main()
