"""The int8 model's product paths, side by side in one run: fbgemm, few rows of a small weight in fp32, many rows in
bf16 on AMX.

core/model/fast.py `SMALL_ROWS`: on an Intel CPU a product of at most 8 rows through a weight of fewer than 2^19
entries (this model's 256 × 256 and 256 × 768) multiplies the int8 weight's values in fp32, where fbgemm's dynamic
product costs ~20 µs a call however small; one sentence's cross-attention then absorbs W^Q and W^O as fp32's does.
`MANY_ROWS`: on a CPU with AMX's bf16 tiles a product of 32 rows or more goes to oneDNN's bf16 product on the int8
values, the rows' scales applied after in fp32. This bench builds the int8 model once per setting (`--configs`)
from the same weights and times them on the same sentences (the model card's held-out Tatoeba test split, tokenized
once, length-sorted), rounds alternating and the first engine alternating, best round counts. It also counts the
sentences whose pieces differ from the first setting's (the products' roundings differ, so near ties can part).

    python bench/bench_int8_small.py --threads 2 --sentences 300 --rounds 3
    python bench/bench_int8_small.py --configs small,small+many --threads 1 --sentences 512 --no-kernels
    python bench/bench_int8_small.py --configs fbgemm,small+many --no-kernels --code /tmp/before   # the code before

Settings: `fbgemm` (every product on fbgemm), `small` (few rows of small weights in fp32), `many` (many rows in bf16,
no fp32 path), `small+many` (both: what an Intel CPU with AMX runs by default).
Rows: greedy one sentence at a time (`tt translate "…"` greedy, the REPL), beam 4 one sentence at a time
(`tt translate "…"`'s default search), greedy and beam 4 in batches of 64 (bulk, `tt eval`, a busy server).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
# --code DIR decodes with another copy of core/ (`git archive REV core | tar -x -C DIR`): a change measured before and
# after by alternating runs of this same script, `fbgemm` (which no change to the other paths touches) in each.
if "--code" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])

import torch  # noqa: E402

from core.checkpoint import load_model  # noqa: E402
from core.decode import beam, search  # noqa: E402
from core.decode.source import prepare_source  # noqa: E402
from core.device import describe_cpu  # noqa: E402
from core.model import fast  # noqa: E402

CONFIGS = {  # setting -> (SMALL_IN_FP32, MANY_ROWS_BF16)
    "fbgemm": (False, False),
    "small": (True, False),
    "many": (False, True),
    "small+many": (True, True),
}


def int8_model(model: torch.nn.Module, config: str) -> torch.nn.Module:
    fast.SMALL_IN_FP32, fast.MANY_ROWS_BF16 = CONFIGS[config]  # read when the int8 layers (and their step) are built
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = fast.fast_model(model, "int8")
        run(q, "greedy", [[5, 6, 3]])  # builds the fused step under this setting
        return q
    finally:
        fast.SMALL_IN_FP32 = fast.MANY_ROWS_BF16 = None


def kernel_table(model: torch.nn.Module, threads: int, calls: int) -> None:
    """µs a call of each product of the first decoder layer (and the generator) for a few row counts: fbgemm's
    int8 product (`int8_rows`), MKL's fp32 product of the same int8 weights, dequantized (small weights only), and
    oneDNN's bf16 product on the int8 values (`ManyRowsBf16`)."""
    from core.model.step import fused_step

    step = fused_step(int8_model(model, "small"))
    layer = step.layers[0]
    products = {n: getattr(layer, n) for n in ("qkv", "self_out", "cross_q", "w_1", "w_2")}
    products["generator"] = step.generator

    from bench_kernels import best_us

    def best(fn) -> float:
        return best_us(fn, calls, 5)

    print(f"µs a call, {threads} threads, best of 5 × {calls} calls: fbgemm int8 / fp32 on the int8 weights / bf16 on")
    print("the int8 values (– : a weight the fp32 path does not take)")
    print("| rows | " + " | ".join(f"{n} ({p.in_features}×{p.out_features})" for n, p in products.items()) + " |")
    print("|---:|" + "---:|" * len(products))
    bf16 = {}  # each product's bf16 kernel on its int8 values, made (and packed) once
    for name, p in products.items():
        weight = torch.ops.quantized.linear_unpack(p.packed[1])[0]
        bf16[name] = fast.ManyRowsBf16(weight.int_repr(), fast.int8_scales(weight)[0], p.packed[2])
    for rows in (1, 2, 4, 8, 16, 32, 64, 256):
        cells = []
        for name, p in products.items():
            x = torch.randn(rows, p.in_features)
            int8 = best(lambda: fast.int8_rows(x, *p.packed))
            fp32 = "–" if p.small is None else f"{best(lambda: p.small(x)):.0f}"
            cells.append(f"{int8:.0f} / {fp32} / {best(lambda: bf16[name](x)):.0f}")
        print(f"| {rows} | " + " | ".join(cells) + " |")
    print()


def run(model: torch.nn.Module, method: str, batch: list[list[int]]) -> list[list[int]]:
    src = search.pad_batch(batch, model.cfg.pad_id)  # (B, S)
    if method == "greedy":
        return [h.tokens for h in search.greedy(model, src)]
    return [hyps[0].tokens for hyps in beam.beam_search(model, src, beam_size=4, alpha=0.6)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "weights"))
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200, help="calls per timing in the kernel table")
    parser.add_argument("--no-kernels", action="store_true", help="only the decoding rows")
    parser.add_argument("--code", help="a directory holding another copy of core/ to decode with (before/after)")
    parser.add_argument("--many-rows", type=int, help="MANY_ROWS for this run (the fewest rows a bf16 product takes)")
    parser.add_argument(
        "--configs", default="fbgemm,small", help=f"settings to compare, the first the reference ({', '.join(CONFIGS)})"
    )
    args = parser.parse_args()
    configs = args.configs.split(",")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or len(configs) < 2:
        parser.error(f"--configs takes two or more of {', '.join(CONFIGS)}; got {args.configs!r}")
    torch.set_num_threads(args.threads)
    if args.many_rows is not None:
        fast.MANY_ROWS = args.many_rows  # read at every call
    from bench_ct2 import held_out

    loaded = load_model(Path(args.model))
    cfg, tok = loaded.cfg, loaded.tokenizer
    sources, _ = held_out(Path(args.model))
    ids = [prepare_source(tok, s, cfg.max_len).ids or [cfg.eos_id] for s in sources[: args.sentences]]
    ids.sort(key=len)
    models = {name: int8_model(loaded.model, name) for name in configs}
    rows = {
        "greedy, batch 1": ("greedy", [[s] for s in ids]),
        "beam 4, batch 1": ("beam", [[s] for s in ids]),
        "greedy, batch 64": ("greedy", [ids[i : i + 64] for i in range(0, len(ids), 64)]),
        "beam 4, batch 64": ("beam", [ids[i : i + 64] for i in range(0, len(ids), 64)]),
    }
    code = Path(sys.modules["core"].__file__).parent
    print(
        f"CPU: {describe_cpu()}; torch {torch.__version__}; {args.threads} threads; {len(ids)} sentences; code {code}; "
        f"MANY_ROWS {fast.MANY_ROWS}\n"
    )
    if not args.no_kernels:
        with torch.inference_mode():
            kernel_table(loaded.model, args.threads, args.calls)
    others = configs[1:]
    print(f"| row | {configs[0]} (sent/s) | " + " | ".join(f"{c} (sent/s) | ratio | differ" for c in others) + " |")
    print("|---|---:|" + "---:|---:|---:|" * len(others))
    with torch.inference_mode():
        for row, (method, batches) in rows.items():
            best = dict.fromkeys(models, float("inf"))
            outputs: dict[str, list] = {}
            for r in range(args.rounds):
                names = list(models) if r % 2 == 0 else list(reversed(models))
                for name in names:
                    start = time.perf_counter()
                    out = [t for batch in batches for t in run(models[name], method, batch)]
                    best[name] = min(best[name], time.perf_counter() - start)
                    outputs[name] = out
            rate = {name: len(ids) / best[name] for name in models}
            cells = [f"{rate[configs[0]]:.1f}"]
            for c in others:
                differ = sum(x != y for x, y in zip(outputs[configs[0]], outputs[c]))
                cells.append(f"{rate[c]:.1f} | {rate[c] / rate[configs[0]]:.2f}× | {differ} of {len(ids)}")
            print(f"| {row} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
