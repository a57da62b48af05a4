"""The training-data pipeline at corpus scale: read → clean → split → tokenizer → encode → cache, then
what a resumed run pays instead (opening the memory-mapped shards).

Runs `prepare_data` twice in fresh processes on the same corpora and cache directory — first from the
raw text, then from the cache — and prints the wall and CPU seconds, the pairs per second, and each
process's peak resident memory. The reference for "a resume does not re-read" is the first row,
measured in the same run. Each cell runs in its own process so the peak RSS is that cell's.

    python bench/bench_data.py                                # Europarl v7 + Tatoeba from ../shared/data
    python bench/bench_data.py --data PREFIX_OR_TSV --vocab-size 8000 --limit 200000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def one_cell(args: argparse.Namespace) -> None:
    """In a child process: prepare once, print a JSON line of the figures."""
    from core.train.config import TrainConfig
    from core.train.prepare import prepare_data

    cfg = TrainConfig(
        data=args.data, out=args.run, vocab_size=args.vocab_size, cache_dir=args.cache, spm_sample=args.spm_sample
    )
    t0, c0 = time.perf_counter(), time.process_time()
    prepared = prepare_data(cfg, Path(args.run), reuse_tokenizer=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = prepared.stats["pairs_read"] or prepared.stats["train_pairs"]
    print(
        json.dumps(
            {
                "cached": prepared.stats["cached"],
                "wall": wall,
                "cpu": cpu,
                "pairs": n,
                "train": len(prepared.train),
                "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "cleaning": prepared.stats["cleaning"],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", action="append", help="corpora as `tt train --data` takes them (repeatable)")
    parser.add_argument("--vocab-size", type=int, default=16000)
    parser.add_argument("--spm-sample", type=int, default=1_000_000)
    parser.add_argument("--cell", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell:
        return one_cell(args)
    data = args.data or [str(SHARED / "europarl" / "europarl-v7"), str(SHARED / "tatoeba-fra-eng" / "fra-eng.tsv")]
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for label in ("from the raw corpora", "from the cache (a resumed run)"):
            cmd = [sys.executable, __file__, "--cell", "--run", f"{tmp}/run", "--cache", f"{tmp}/cache"]
            cmd += ["--vocab-size", str(args.vocab_size), "--spm-sample", str(args.spm_sample)]
            for d in data:
                cmd += ["--data", d]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            rows.append((label, json.loads(out.strip().splitlines()[-1])))
        cache_mib = sum(f.stat().st_size for f in Path(tmp, "cache").rglob("*") if f.is_file()) / 2**20
    load = os.getloadavg()[0]
    from core.device import describe_cpu

    print(f"CPU: {describe_cpu()}; load average {load:.1f}; corpora: {', '.join(data)}")
    print(f"vocabulary {args.vocab_size}; cache on disk {cache_mib:.0f} MiB")
    print()
    print("| prepare | wall s | CPU s | pairs/s (wall) | peak RSS MiB | training examples |")
    print("|---|---|---|---|---|---|")
    for label, r in rows:
        print(
            f"| {label} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['pairs'] / r['wall']:,.0f} | {r['rss_mib']:,.0f} "
            f"| {r['train']:,} |"
        )
    first, second = rows[0][1], rows[1][1]
    print()
    print(f"a resume prepares {first['wall'] / second['wall']:.0f}× faster than a fresh start")
    print("cleaning: " + ", ".join(f"{k} {v:,}" for k, v in first["cleaning"].items()))


if __name__ == "__main__":
    main()
