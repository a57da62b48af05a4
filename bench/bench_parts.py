"""A batch searched whole, in parts at once, and by tt's rule (core/decode/parts.py), quiet and beside busy processes.

At two threads a batch's search either hands every product to both threads (torch's OpenMP: the threads meet after
each of ~100 products a step) or deals the rows into two parts, each searched on a thread of its own with one core.
tt's rule (`parts.crowded`) splits a batch where other processes keep the cores busy.
This bench times the three ways on the same held-out sentences, batch by batch, in one process (in turn, best of
--rounds passes), for each precision and search, on a quiet machine and with --busy processes spinning beside it
(what a laptop's other programs do to the cores). fp32's outputs must be identical whole and in parts (int8's may
move where a part's rows are quantized together).

    python bench/bench_parts.py --threads 2 --sentences 1024 --batch 64 --rounds 3 --busy 0,1

Sentences: the shipped fr→en model card's Tatoeba test split (bench_ct2.py's `held_out`), sorted by length, in batches
of --batch; fp32 as `tt translate` loads it (packed where that pays), int8 built from it. The GOMP_SPINCOUNT every tt
command sets (tt_cli/__init__.py) is set before torch loads.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tt_cli  # noqa: E402, F401  (tt's OpenMP wait, set before torch loads)

# isort: split
import torch  # noqa: E402
from bench_revisions import cpu_name  # noqa: E402

SPIN = "while True: pass"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", default="0,1", help="busy processes beside the bench, a row set per count")
    parser.add_argument("--precisions", default="fp32,int8")
    parser.add_argument("--methods", default="greedy,beam")
    args = parser.parse_args()

    from bench_ct2 import held_out

    from core.checkpoint import load_model
    from core.decode import beam, parts, search
    from core.model.fast import fast_model

    torch.set_num_threads(args.threads)
    loaded = load_model(ROOT / "weights")
    packed = load_model(ROOT / "weights", packed=True).model
    tok, cfg = loaded.tokenizer, loaded.cfg
    sources, _ = held_out(ROOT / "weights")
    ids = sorted((tok.encode(s)[: cfg.max_len - 2] + [cfg.eos_id] for s in sources[: args.sentences]), key=len)
    batches = [ids[i : i + args.batch] for i in range(0, len(ids), args.batch)]
    models = {p: packed if p == "fp32" else fast_model(loaded.model, p) for p in args.precisions.split(",")}
    rule = (parts.MIN_PART_ROWS, parts.CROWDED_CORES)
    ways = {  # MIN_PART_ROWS, CROWDED_CORES
        "whole": (1 << 30, 0.0),
        "parts": (rule[0], -1.0),  # every batch in parts, whatever the machine
        "rule": rule,  # tt's own choice: in parts where others crowd the cores
    }

    def run(model, method: str, way: str) -> tuple[float, list]:
        parts.MIN_PART_ROWS, parts.CROWDED_CORES = ways[way]
        try:
            start, out = time.perf_counter(), []
            for batch in batches:
                src = search.pad_batch(batch, cfg.pad_id)
                if method == "greedy":
                    out += [h.tokens for h in search.greedy(model, src)]
                else:
                    out += [hyps[0].tokens for hyps in beam.beam_search(model, src, beam_size=4, alpha=0.6)]
            return time.perf_counter() - start, out
        finally:
            parts.MIN_PART_ROWS, parts.CROWDED_CORES = rule

    print(
        f"CPU: {cpu_name()}; torch {torch.__version__}, {args.threads} threads, {len(ids)} sentences, batch {args.batch}"
    )
    print(f"best of {args.rounds} passes, sentences/second\n")
    print("| busy processes | precision | search | whole | in parts | parts / whole | tt's rule | rule / whole |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for busy in [int(b) for b in args.busy.split(",")]:
        hogs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
        try:
            for precision, model in models.items():
                for method in args.methods.split(","):
                    run(model, method, "parts")  # warm-up: the pool's threads, the caches' buffers
                    best, outs = dict.fromkeys(ways, float("inf")), {}
                    for r in range(args.rounds):
                        for way in list(ways) if r % 2 == 0 else list(ways)[::-1]:
                            seconds, outs[way] = run(model, method, way)
                            best[way] = min(best[way], seconds)
                    if precision == "fp32" and outs["parts"] != outs["whole"]:
                        raise SystemExit("fp32 in parts gave other outputs than the whole batch")
                    rate = {way: len(ids) / best[way] for way in ways}
                    print(
                        f"| {busy} | {precision} | {method} | {rate['whole']:.1f} | {rate['parts']:.1f} "
                        f"| {rate['parts'] / rate['whole']:.2f}× | {rate['rule']:.1f} "
                        f"| {rate['rule'] / rate['whole']:.2f}× |",
                        flush=True,
                    )
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()


if __name__ == "__main__":
    main()
