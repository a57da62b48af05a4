"""tt's decoding at several git revisions, side by side in one run: sentences/second of the same sentences, each
revision in a process of its own, the revisions taken in turn round after round (a noisy host moves them together).

    python bench/bench_revisions.py a0c2386 de1486b HEAD --precision fp32 --batch 64 --method greedy --threads 1

A revision is a commit (checked out into a temporary worktree) or `.` for the working tree. The first revision is
the reference; the table gives each one's median over the rounds and its ratio to the reference's median, with the
CPU named. The model is the shipped fr→en (`weights/` of the working tree, so every revision decodes the same
weights); the sentences newstest2012's lines 1,000–1,255 (held out), else tests/fixtures/tiny.tsv's French.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run inside each revision's tree: its `core` first on the path, the working tree's weights.
WORKER = """
import json, os, sys, time
tree, model, src, precision, batch, method, threads = sys.argv[1:8]
sys.path.insert(0, tree)
import torch
torch.set_num_threads(int(threads))
from core.api import Translator
lines = json.load(open(src))
t = Translator(model, quantize=None if precision == "fp32" else precision, method=method, batch_size=int(batch))
t.translate(lines[: int(batch)])  # warm-up: allocator, kernels, the C library
start = time.perf_counter()
t.translate(lines)
print(len(lines) / (time.perf_counter() - start))
"""


def sentences() -> tuple[list[str], str]:
    news = ROOT.parent / "shared" / "data" / "news" / "newstest2012.fr"
    if news.exists():
        return news.read_text(encoding="utf-8").splitlines()[1000:1256], "newstest2012.fr lines 1,000–1,255"
    fixture = (ROOT / "tests" / "fixtures" / "tiny.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[0] for line in fixture], "tests/fixtures/tiny.tsv"


def cpu_name() -> str:
    sys.path.insert(0, str(ROOT))
    from core.device import cpu_flags

    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    family = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("cpu family")), ""
    )
    number = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model\t")), "")
    avx512 = "AVX-512" if "avx512f" in cpu_flags() else "no AVX-512"
    return f"{model} (family {family} model {number}, {avx512}), {os.cpu_count()} cores"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("revisions", nargs="+", help="commits, or . for the working tree; the first is the reference")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "int8"])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--method", default="greedy", choices=["greedy", "beam", "sample"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    lines, what = sentences()
    env = {**os.environ, "GOMP_SPINCOUNT": os.environ.get("GOMP_SPINCOUNT", "3000")}  # tt's own OpenMP wait
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "lines.json"
        src.write_text(json.dumps(lines), encoding="utf-8")
        trees = []
        for i, rev in enumerate(args.revisions):
            if rev == ".":
                trees.append(ROOT)
                continue
            tree = Path(tmp) / f"rev{i}"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), rev], check=True)
            trees.append(tree)
        try:
            rates: list[list[float]] = [[] for _ in trees]
            for _ in range(args.rounds):
                for i, tree in enumerate(trees):
                    cmd = [sys.executable, "-c", WORKER, str(tree), str(ROOT / "weights"), str(src), args.precision]
                    cmd += [str(args.batch), args.method, str(args.threads)]
                    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=tmp).stdout
                    rates[i].append(float(out.split()[-1]))
        finally:
            for tree in trees:
                if tree != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"{cpu_name()}; {args.precision} {args.method}, batch {args.batch}, {args.threads} thread(s), {what},")
    print(f"one timed pass per round after a warm-up batch, {args.rounds} rounds in turn; sentences/second")
    print()
    print("| revision | rounds | median | ratio to the first |")
    print("|---|---|---:|---:|")
    reference = statistics.median(rates[0])
    for rev, got in zip(args.revisions, rates):
        rounds = " / ".join(f"{r:.1f}" for r in got)
        print(f"| {rev} | {rounds} | {statistics.median(got):.1f} | {statistics.median(got) / reference:.2f}× |")


if __name__ == "__main__":
    main()
