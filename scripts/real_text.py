"""How much of real text survives `tt translate`: the share of protected spans kept, lines that lost content
(and whether each was warned about), markup intact, final punctuation and capitals kept.

    python scripts/real_text.py [--model weights/next] [--show]

The lines are tests/fixtures/real_text.py's (written for this: numbers, dates, money, phones, paths, e-mail,
URLs, code, Markdown and HTML, capitals, emoji, other scripts, punctuation, a long line); the default
pipeline of `tt translate` (beam 4) runs them through core.api.translate_text_lines.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.api import translate_text_lines  # noqa: E402
from core.checkpoint import load_model  # noqa: E402
from core.decode.translate import TranslateOptions  # noqa: E402
from tests.fixtures.real_text import CASES, check  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--show", action="store_true", help="print each line that misses something")
    args = parser.parse_args()
    loaded = load_model(args.model)
    lines = [line for line, _ in CASES]
    start = time.perf_counter()
    results = list(translate_text_lines(loaded, lines, TranslateOptions().validate()))
    seconds = time.perf_counter() - start
    rows = [check(line, copies, r) for (line, copies), r in zip(CASES, results)]
    copies = sum(r["copies"] for r in rows)
    kept = sum(r["kept"] for r in rows)
    lost = [i for i, r in enumerate(rows) if r["lost"]]
    silent = [i for i in lost if not rows[i]["warned"]]
    warned = sum(r["warned"] for r in rows)
    markup = [i for i, r in enumerate(rows) if r["markup"]]
    intact = sum(rows[i]["markup_intact"] for i in markup)
    print(f"model: {loaded.path}   lines: {len(rows)}   {seconds:.1f} s")
    print(f"spans kept:                {kept}/{copies} ({100 * kept / max(copies, 1):.1f} %)")
    placed = sum(len(s.placed) for r in results for s in r.sentences)
    print(f"spans placed by alignment: {placed} (the model dropped them)")
    print(f"lines that lost a span:    {len(lost)} (silently: {len(silent)})")
    print(f"lines with a loss warning: {warned}")
    print(f"markup intact:             {intact}/{len(markup)}")
    print(f"final punctuation kept:    {sum(r['stop_kept'] for r in rows)}/{len(rows)}")
    print(f"capitals kept:             {sum(r['caps_kept'] for r in rows)}/{len(rows)}")
    if args.show:
        for i, (r, res) in enumerate(zip(rows, results)):
            bad = r["missing"] or not r["markup_intact"] or not r["stop_kept"] or not r["caps_kept"] or r["warned"]
            if bad:
                print(f"\n{i + 1}: {lines[i][:120]}\n   → {res.text[:120]}\n   {r} {res.warnings}")


if __name__ == "__main__":
    main()
