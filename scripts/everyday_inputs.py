"""How a model copes with the way people type: ALL CAPS, lower case, no accents.

docs/everyday/everyday.fr holds 30 everyday sentences written for tt (with our own references in
everyday.en). Each is translated as written and in four typed variants; the model alone is measured
(no text pipeline: `tt translate` restores capitals on its own, which would hide what the model does).
Scores are case-insensitive sacreBLEU and chrF against the references, and "same" counts the variants
whose translation (lower-cased) equals the one of the sentence as written.

    python scripts/everyday_inputs.py                       # the shipped model
    python scripts/everyday_inputs.py --model runs/m1       # a run's best model
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.api import Translator  # noqa: E402

SET = ROOT / "docs" / "everyday"


def strip_accents(text: str) -> str:
    """é → e, ç → c; œ and æ are letters of their own and stay."""
    return "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))


VARIANTS = {
    "as written": lambda s: s,
    "ALL CAPS": str.upper,
    "lower case": str.lower,
    "no accents": strip_accents,
    "lower case, no accents": lambda s: strip_accents(s.lower()),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    ap.add_argument("--show", action="store_true", help="print every translation")
    args = ap.parse_args()
    from sacrebleu.metrics import BLEU, CHRF

    sources = (SET / "everyday.fr").read_text(encoding="utf-8").splitlines()
    refs = (SET / "everyday.en").read_text(encoding="utf-8").splitlines()
    translator = Translator(args.model)
    print(f"model: {translator.path}\n")
    print("| input | BLEU (uncased) | chrF | same as written |\n|---|---|---|---|")
    written = None
    for name, variant in VARIANTS.items():
        out = [r.text for r in translator.translate([variant(s) for s in sources])]
        written = written or [o.lower() for o in out]
        bleu = BLEU(lowercase=True).corpus_score(out, [refs]).score
        chrf = CHRF(lowercase=True).corpus_score(out, [refs]).score
        same = sum(o.lower() == w for o, w in zip(out, written))
        print(f"| {name} | {bleu:.1f} | {chrf:.1f} | {same}/{len(out)} |")
        if args.show:
            for s, o in zip(sources, out):
                print(f"    {variant(s)}  →  {o}")


if __name__ == "__main__":
    main()
