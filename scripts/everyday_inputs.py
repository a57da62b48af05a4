"""How a model copes with the way people type: ALL CAPS, lower case, no accents.

docs/everyday/everyday.fr holds 30 everyday sentences written for tt (with our own references in
everyday.en). Each is translated as written and in four typed variants; the model alone is measured
(no text pipeline: `tt translate` restores capitals on its own, which would hide what the model does).
Scores are case-insensitive sacreBLEU and chrF against the references, and "same" counts the variants
whose translation (lower-cased) equals the one of the sentence as written.

    python scripts/everyday_inputs.py                       # the shipped model
    python scripts/everyday_inputs.py --model runs/m1       # a run's best model
    python scripts/everyday_inputs.py --accents             # + the accent-free variants with the pipeline's
                                                            #   accent step (core/text/accents.py) before the model
    python scripts/everyday_inputs.py --accents --src ../shared/data/news/newstest2013.fr \
        --ref ../shared/data/news/newstest2013.en --lines 300   # another set, its first N lines

With --accents it also counts, word by word, how often the step gave back the spelling as written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.api import Translator  # noqa: E402
from core.text.accents import accent_table, restore_accents, strip_accents  # noqa: E402

SET = ROOT / "docs" / "everyday"


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
    ap.add_argument("--accents", action="store_true", help="also the accent-free variants with accents given back")
    ap.add_argument("--src", type=Path, default=SET / "everyday.fr", help="French sentences, one a line")
    ap.add_argument("--ref", type=Path, default=SET / "everyday.en", help="their English references")
    ap.add_argument("--lines", type=int, default=0, help="only the first N lines (0: all)")
    args = ap.parse_args()
    from sacrebleu.metrics import BLEU, CHRF

    sources = args.src.read_text(encoding="utf-8").splitlines()
    refs = args.ref.read_text(encoding="utf-8").splitlines()
    if args.lines:
        sources, refs = sources[: args.lines], refs[: args.lines]
    translator = Translator(args.model)
    variants = dict(VARIANTS)
    if args.accents:
        table = accent_table(translator.loaded.tokenizer)
        variants["no accents → given back"] = lambda s: restore_accents(strip_accents(s), table)
        variants["lower case, no accents → given back"] = lambda s: restore_accents(strip_accents(s.lower()), table)
        right, wrong = restored_words(sources, table)
        print(f"accents given back: {right} words as written, {wrong} otherwise ({right / max(1, right + wrong):.1%})")
    print(f"model: {translator.path}, {args.src.name}: {len(sources)} sentences\n")
    print("| input | BLEU (uncased) | chrF | same as written |\n|---|---|---|---|")
    written = None
    for name, variant in variants.items():
        out = [r.text for r in translator.translate([variant(s) for s in sources])]
        written = written or [o.lower() for o in out]
        bleu = BLEU(lowercase=True).corpus_score(out, [refs]).score
        chrf = CHRF(lowercase=True).corpus_score(out, [refs]).score
        same = sum(o.lower() == w for o, w in zip(out, written))
        print(f"| {name} | {bleu:.1f} | {chrf:.1f} | {same}/{len(out)} |")
        if args.show:
            for s, o in zip(sources, out):
                print(f"    {variant(s)}  →  {o}")


def restored_words(sources: list[str], table) -> tuple[int, int]:
    """Words the accent step changed in the accent-free sources: (as written, otherwise)."""
    import re

    word = re.compile(r"[^\W\d_]+")
    right = wrong = 0
    for s in sources:
        bare = strip_accents(s)
        for original, stripped, given in zip(*(word.findall(t) for t in (s, bare, restore_accents(bare, table)))):
            if given != stripped:
                right, wrong = right + (given == original), wrong + (given != original)
    return right, wrong


if __name__ == "__main__":
    main()
