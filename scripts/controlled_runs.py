"""Short controlled training runs: label smoothing (ε 0.1 vs 0) and warm-up (400 steps vs none).

    python scripts/controlled_runs.py --dry-run                 # print the commands only
    python scripts/controlled_runs.py --steps 1500 --out runs/controlled

Each pair differs in one option only (same data, seed, preset, steps); three runs in all. The test BLEU of each
lands in OUT/results.json, which `tt analyze claims --runs OUT` reads with the runs' validation records. Every run is scored by
`tt eval` on Tatoeba's held-out test buckets [10, 25), read from ../shared/data at run time and
written to a temporary directory, never into the repository. Slow on a laptop CPU: three runs of
--steps each (a run already in --out is evaluated, not retrained). Not part of the test suite; docs/claims.md gives the figures and the commands.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))
TSV = DATA / "tatoeba-fra-eng" / "fra-eng.tsv"

# name -> the options that differ; everything else is shared. The baseline (ε 0.1, 400 warm-up
# steps) is the "with" side of both pairs, so three runs answer two claims.
RUNS = {
    "baseline": ["--label-smoothing", "0.1", "--warmup", "400"],
    "no-smoothing": ["--label-smoothing", "0", "--warmup", "400"],
    "no-warmup": ["--label-smoothing", "0.1", "--warmup", "1"],  # warmup 1: the peak rate from step 1
}
PAIRS = (("label smoothing", "baseline", "no-smoothing"), ("warm-up", "baseline", "no-warmup"))


def train_command(name: str, out: Path, steps: int, preset: str, vocab: int, extra: list[str]) -> list[str]:
    return [
        "tt", "train", "--data", str(TSV), "--preset", preset, "--vocab-size", str(vocab),
        "--valid-per-mille", "10", "--test-per-mille", "15", "--max-steps", str(steps), "--seed", "1",
        "--out", str(out / name), "--quiet", *extra, *RUNS[name],
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "controlled")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and stop")
    parser.add_argument("--train-args", default="", help="more tt train options shared by the three runs")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at once (one per core, with --threads 1)")
    args = parser.parse_args()
    if not TSV.exists():
        print(f"controlled_runs.py: {TSV} is missing (set TT_SHARED_DATA)", file=sys.stderr)
        return 1
    extra = shlex.split(args.train_args)
    commands = {name: train_command(name, args.out, args.steps, args.preset, args.vocab_size, extra) for name in RUNS}
    if args.dry_run:
        for cmd in commands.values():
            print(shlex.join(cmd))
        return 0
    from core.data.readers import heldout_range, read_corpus, write_aligned

    bleu = {}
    with tempfile.TemporaryDirectory() as tmp:
        src, ref = Path(tmp) / "test.fr", Path(tmp) / "test.en"
        write_aligned(heldout_range(read_corpus(TSV), 10, 25), src, ref)
        todo = [cmd for name, cmd in commands.items() if not (args.out / name / "model.safetensors").exists()]
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            list(pool.map(lambda cmd: subprocess.run(cmd, check=True), todo))
        for name in commands:
            result = subprocess.run(
                ["tt", "eval", "--model", str(args.out / name), "--src", str(src), "--ref", str(ref), "--json"],
                check=True,
                capture_output=True,
                text=True,
            )
            bleu[name] = json.loads(result.stdout.strip().splitlines()[-1])["bleu"]
    results = {name: {"bleu": bleu[name]} for name in RUNS}
    results["bleu_on"] = "test BLEU (beam 4, Tatoeba held-out test)"
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    shape = f"{args.preset} {args.train_args}".strip()
    print(f"{'claim':16} {'with':>14} {'BLEU':>6}  {'without':>14} {'BLEU':>6}  ({shape}, {args.steps} steps)")
    for claim, on, off in PAIRS:
        print(f"{claim:16} {on:>14} {bleu[on]:6.1f}  {off:>14} {bleu[off]:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
