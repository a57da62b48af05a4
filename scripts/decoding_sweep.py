"""Choose beam size and length penalty α on a development set (the model issue: newstest2012).

Runs `tt eval` for every (beam, α) pair on the first --lines lines of --dev and prints a Markdown table of
sacreBLEU, chrF and sentences per second, best BLEU first. Greedy search is the beam-1 row.

    python scripts/decoding_sweep.py --model weights --dev ../shared/data/news/newstest2012 --lines 1000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from ship_weights import head_files  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT / "weights"))
    ap.add_argument("--dev", type=Path, required=True, help="prefix P of P.fr and P.en")
    ap.add_argument("--lines", type=int, default=1000, help="first lines of --dev scored (0 = all)")
    ap.add_argument("--beams", default="1,4,6")
    ap.add_argument("--alphas", default="0.6,1.0")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    files = Path(f"{args.dev}.fr"), Path(f"{args.dev}.en")
    if args.lines:
        files = head_files(*files, args.lines, Path(tempfile.mkdtemp()), "dev")
    rows = []
    for beam in map(int, args.beams.split(",")):
        for alpha in map(float, args.alphas.split(",")) if beam > 1 else [0.0]:
            search = ["--greedy"] if beam == 1 else ["--beam", str(beam), "--alpha", str(alpha)]
            cmd = [sys.executable, "-m", "tt_cli.main", "eval", "--model", args.model, "--src", str(files[0])]
            cmd += ["--ref", str(files[1]), "--json", "--threads", str(args.threads), *search]
            r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
            rows.append((r["bleu"], r["chrf"], r["sentences_per_second"], beam, alpha))
            print(f"beam {beam} alpha {alpha}: BLEU {r['bleu']:.2f}", file=sys.stderr)
    which = f"the first {args.lines} lines" if args.lines else "all lines"
    print(f"{args.dev.name}: {r['sentences']} sentences ({which}), model {args.model}; BLEU {r['bleu_signature']}\n")
    print("| beam | α | BLEU | chrF | sentences/s |\n|---:|---:|---:|---:|---:|")
    for bleu, chrf, sps, beam, alpha in sorted(rows, reverse=True):
        print(f"| {beam} | {'–' if beam == 1 else alpha} | {bleu:.2f} | {chrf:.2f} | {sps:.1f} |")


if __name__ == "__main__":
    main()
