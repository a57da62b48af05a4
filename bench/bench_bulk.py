"""Bulk translation across processes: `tt translate --input F --output G` in one process against
torchrun with several, on the lines of newstest2013 (processes × threads per process).

Each row is one whole command, start-up included (every process imports torch and loads the model),
on the first --lines lines of newstest2013.fr, beam 4 (tt's default) unless --greedy:

    1 × 1   tt translate --threads 1                       (the reference: speed-ups are against it)
    2 × 1   torchrun --nproc-per-node 2 … --threads 1      (two processes, the lines shared out)
    1 × 2   tt translate --threads 2                       (one process, torch's intra-op threads)

Rows are printed as they finish.
The outputs are compared with the reference's: 2 × 1 must be byte-identical (each process decodes
whole chunks exactly as one process does); 1 × 2 may differ in a last digit of a --json float, as
any change of thread count may, so the plain text is compared.

    nice -n 5 python bench/bench_bulk.py [--lines 300] [--greedy] [--batch-size 32]

Needs ../shared/data/news/newstest2013.fr (or $TT_SHARED_DATA/news/newstest2013.fr).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_serve import cpu  # noqa: E402

SHARED = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))
CONFIGS = [(1, 1), (2, 1), (1, 2)]  # (processes, threads per process); the first is the reference


def command(procs: int, threads: int, extra: list[str]) -> list[str]:
    tt = ["-m", "tt_cli.main", "translate", "--raw", "--threads", str(threads), *extra]
    if procs == 1:
        return [sys.executable, *tt]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}", *tt]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--greedy", action="store_true")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model", help="model directory (default: the shipped one)")
    args = parser.parse_args()
    source_file = SHARED / "news" / "newstest2013.fr"
    if not source_file.is_file():
        raise SystemExit(f"{source_file}: not found (set TT_SHARED_DATA)")
    lines = source_file.read_text(encoding="utf-8").splitlines()[: args.lines]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TT_SERVER": "", "OMP_NUM_THREADS": "1"}
    print(f"CPU: {cpu()}")
    print(
        f"newstest2013.fr, first {len(lines)} lines; {'greedy' if args.greedy else 'beam 4'}, batch size "
        f"{args.batch_size}; load average {os.getloadavg()[0]:.1f} at the start"
    )
    print(f"{'processes × threads':<20} {'wall s':>8} {'lines/s':>8} {'speed-up':>9}  output vs 1 × 1", flush=True)
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "in.fr"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        extra = ["--batch-size", str(args.batch_size), "-i", str(source)]
        extra += (["--greedy"] if args.greedy else []) + (["--model", args.model] if args.model else [])
        for procs, threads in CONFIGS:
            out = Path(tmp) / f"out-{procs}x{threads}.json"
            start = time.perf_counter()
            done = subprocess.run(
                command(procs, threads, [*extra, "--json", "-o", str(out)]), capture_output=True, text=True, env=env
            )
            wall = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"{procs} × {threads} failed:\n{done.stderr}")
            data = out.read_bytes()
            reference = reference or (wall, data)
            same = "byte-identical" if data == reference[1] else _text_same(data, reference[1])
            print(
                f"{f'{procs} × {threads}':<20} {wall:8.1f} {len(lines) / wall:8.2f} {reference[0] / wall:8.2f}×  {same}",
                flush=True,
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def _text_same(out: bytes, ref: bytes) -> str:
    import json

    def texts(data: bytes) -> list[str]:
        return [json.loads(line)["translation"] for line in data.decode("utf-8").splitlines()]

    a, b = texts(out), texts(ref)
    differ = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
    return "floats differ; text identical" if not differ else f"{differ} translations differ"


if __name__ == "__main__":
    main()
