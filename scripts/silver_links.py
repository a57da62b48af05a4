"""Silver word links for guided alignment training (`tt train --align-links`), from eflomal.

    pip install -e ".[align]"            # eflomal (Östling & Tiedemann 2016), a fast Bayesian IBM-model aligner
    python scripts/silver_links.py --data ../shared/data/tatoeba-fra-eng/fra-eng.tsv \
        --data ../shared/data/multi30k/train --out runs/silver.links
    tt train --data ../shared/data/tatoeba-fra-eng/fra-eng.tsv --data ../shared/data/multi30k/train \
        --align-links runs/silver.links ...

The pairs are read exactly as `tt train` reads them (core.data.readers.read_corpus, the --data
sources in order), so line k of the output holds the links of the trainer's pair k. Words are the
whitespace tokens of each side, as `tt align` and the links file define them; eflomal sees them
lowercased (better statistics, same positions). Both directions are aligned and symmetrized with
grow-diag-final (core.align.aer.symmetrize). eflomal samples (Gibbs), so two runs may differ in
a few links; the output file is written atomically.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.align.aer import pharaoh, symmetrize  # noqa: E402
from core.data.readers import read_corpus  # noqa: E402
from core.files import atomic_write_bytes  # noqa: E402


def read_links(path: Path) -> list[set[tuple[int, int]]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        out.append({(int(i), int(j)) for i, j in (item.split("-") for item in line.split())})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", required=True, help="as tt train's --data (repeat)")
    parser.add_argument("--src-lang", default="fr")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument(
        "--swap", action="store_true", help="as tt train's --swap: links for the target→source direction"
    )
    parser.add_argument("--out", type=Path, required=True, help="Pharaoh links, one line per pair")
    parser.add_argument("--symmetrize", default="grow-diag-final", choices=["grow-diag-final", "intersection", "union"])
    parser.add_argument("--model", type=int, default=3, help="eflomal model: 1 = IBM1, 2 = + HMM, 3 = + fertility")
    args = parser.parse_args()
    try:
        import eflomal
    except ImportError:
        sys.exit('scripts/silver_links.py: eflomal is not installed (pip install -e ".[align]")')

    pairs = [
        p
        for spec in args.data
        for p in read_corpus(spec, src_lang=args.src_lang, tgt_lang=args.tgt_lang, swap=args.swap)
    ]
    src = io.StringIO("".join(" ".join(p.src.lower().split()) + "\n" for p in pairs))
    tgt = io.StringIO("".join(" ".join(p.tgt.lower().split()) + "\n" for p in pairs))
    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = Path(tmp) / "fwd", Path(tmp) / "rev"
        eflomal.Aligner(model=args.model).align(
            src, tgt, links_filename_fwd=str(fwd), links_filename_rev=str(rev), quiet=False
        )
        forward, reverse = read_links(fwd), read_links(rev)
    if len(forward) != len(pairs) or len(reverse) != len(pairs):
        sys.exit(f"eflomal returned {len(forward)}/{len(reverse)} lines for {len(pairs)} pairs")
    lines = [pharaoh(symmetrize(f, r, args.symmetrize)) for f, r in zip(forward, reverse)]
    atomic_write_bytes(args.out, "".join(line + "\n" for line in lines).encode("utf-8"))
    print(f"{args.out}: links for {len(pairs)} pairs ({sum(len(x.split()) for x in lines)} links)", file=sys.stderr)


if __name__ == "__main__":
    main()
