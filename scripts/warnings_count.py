"""Which warnings the text pipeline gives on a set, and how many: each one printed with its sentence and the
translation, so that a person can read whether it is true (docs/text.md, *A lost name*).

    python scripts/warnings_count.py ../shared/data/news/newstest2013.fr --lines 500 --starts "the name"
    python scripts/warnings_count.py ../shared/data/news/flores101-dev.fr --lines 400 --starts "the name"

The shipped model in int8 (`tt translate`'s default), one thread, the whole pipeline (core.Translator.translate_text).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", type=Path, help="a text file, one line each")
    ap.add_argument("--lines", type=int, default=0, help="its first N lines (0: all)")
    ap.add_argument("--starts", default="", help="only warnings that start so")
    ap.add_argument("--model", default=None, help="a model directory (default: the shipped fr→en)")
    args = ap.parse_args()

    import torch

    from core.api import Translator

    torch.set_num_threads(1)
    lines = args.src.read_text(encoding="utf-8").splitlines()
    lines = lines[: args.lines] if args.lines else lines
    translator = Translator(args.model, quantize="int8")
    found = 0
    for result in translator.translate_text(lines):
        for s in result.sentences:
            for warning in s.warnings:
                if warning.startswith(args.starts):
                    found += 1
                    print(f"line {result.index + 1}: {warning}\n  {s.source}\n  → {s.text}")
    print(f"{found} warnings over {len(lines)} lines ({args.src})")


if __name__ == "__main__":
    main()
