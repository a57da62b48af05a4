"""Memory over a long stream: RSS while translate_lines works through N lines (default 1,000,000).

The lines come from a generator (the French side of tests/fixtures/tiny.tsv, repeated), so the
input itself takes no memory; what is measured is tt's: read-ahead, batches, caches, results. The
resident set size is sampled from /proc/self/statm at every tenth of the stream. Flat means the
last samples are no higher than the first ones after warm-up (allocator noise of a few MiB aside).

    nice -n 19 python bench/bench_stream_memory.py --lines 1000000 [--threads 1] [--model DIR]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default=str(ROOT / "weights"))
    args = parser.parse_args()
    import torch

    from core.checkpoint import load_model
    from core.decode.translate import TranslateOptions, translate_lines

    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, packed=True)  # as tt translate loads it
    fixture = (ROOT / "tests" / "fixtures" / "tiny.tsv").read_text(encoding="utf-8").splitlines()
    french = [line.split("\t")[0] for line in fixture]
    stream = itertools.islice(itertools.cycle(french), args.lines)  # a generator: read by tt's reader thread
    every = max(args.lines // args.samples, 1)
    print(
        f"{args.lines} lines ({len(french)} distinct short sentences, repeated), greedy, batch 32, "
        f"{args.threads} thread(s), load average {os.getloadavg()[0]:.1f}; RSS before load: see first row"
    )
    print("| lines done | RSS MiB | sent/s so far |")
    print("|---:|---:|---:|")
    print(f"| 0 | {rss_mib():.1f} | |", flush=True)
    start, rows = time.perf_counter(), []
    for t in translate_lines(loaded, stream, TranslateOptions(method="greedy", batch_size=32)):
        done = t.index + 1
        if done % every == 0:
            rows.append(rss_mib())
            print(f"| {done} | {rows[-1]:.1f} | {done / (time.perf_counter() - start):.0f} |", flush=True)
    if len(rows) >= 3:
        print(f"RSS growth from the second sample to the last: {rows[-1] - rows[1]:+.1f} MiB")


if __name__ == "__main__":
    main()
