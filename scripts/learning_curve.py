"""A run's learning curve from its metrics.jsonl: validation loss and BLEU against CPU hours and wall hours.

    python scripts/learning_curve.py runs/europarl                 # a Markdown table
    python scripts/learning_curve.py runs/pA runs/pB --last        # pilots side by side: their last validation

CPU time is the training process's own (all its threads; validation included), summed over resumed starts,
so runs compare fairly on a machine shared with other work; the CPU each start ran on is listed below the table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines() if line]


def curve_rows(run: Path) -> list[dict]:
    return [r for r in records(run) if r["event"] == "valid"]


def fmt_sets(r: dict) -> str:
    sets = r.get("sets") or {}
    return " · ".join(f"{name.split('/')[-1]} {s['bleu']:.1f}" for name, s in sets.items() if "bleu" in s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--last", action="store_true", help="only each run's last validation (to compare pilots)")
    args = ap.parse_args()
    print("| run | step | CPU h | wall h | valid loss | BLEU | BLEU per held-out set |")
    print("|---|---|---|---|---|---|---|")
    cpus = {}
    for run in args.runs:
        rows = curve_rows(run)
        for r in rows[-1:] if args.last else rows:
            bleu = f"{r['bleu']:.2f}" if "bleu" in r else "–"
            cpu = f"{r['cpu_time'] / 3600:.2f}" if "cpu_time" in r else "?"
            wall = f"{r['elapsed'] / 3600:.2f}" if "elapsed" in r else "?"
            print(f"| {run.name} | {r['step']} | {cpu} | {wall} | {r['valid_loss']:.3f} | {bleu} | {fmt_sets(r)} |")
        for r in records(run):
            if r["event"] == "start":
                cpus.setdefault(r.get("cpu", "CPU not recorded"), set()).add(run.name)
    print()
    for cpu, names in cpus.items():
        print(f"- {cpu}: {', '.join(sorted(names))}")


if __name__ == "__main__":
    main()
