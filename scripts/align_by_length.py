"""How a model's alignment holds up with length, in its own domain: AER against eflomal's silver links
of Tatoeba pairs, the pairs alone and joined side by side (2, 4, 8 at a time).

    python scripts/silver_links.py --data ../shared/data/tatoeba-fra-eng/fra-eng.tsv \
        --data ../shared/data/multi30k/train --out runs/silver.links
    python scripts/align_by_length.py --model weights --links runs/silver.links --layer 2 --head 1

Joining n pairs keeps every word and link (moved past the words before it), so the only thing that
changes is the length of what the model reads: a rise in AER with n is the model losing its way in
long input, not harder words. docs/alignment.md has the figures. The lines default to 1501-2000 of
fra-eng.tsv, pairs the shipped model trained on (their silver links are the yardstick, not gold).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.align.aer import GoldPair, score_links  # noqa: E402
from core.align.links import AlignRule, align, load_rule, pair_attention  # noqa: E402
from core.checkpoint import load_model  # noqa: E402
from core.data.readers import read_corpus  # noqa: E402
from core.model.attention import head_index, layer_index  # noqa: E402
from scripts.silver_links import read_links  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def joined(pairs, links, n: int):
    """Consecutive groups of n pairs as one pair each, with their links moved along."""
    out = []
    for k in range(0, len(pairs) - n + 1, n):
        src, tgt, moved = [], [], set()
        for (s, t), ls in zip(pairs[k : k + n], links[k : k + n]):
            moved |= {(i + len(src), j + len(tgt)) for i, j in ls}
            src, tgt = src + s.split(), tgt + t.split()
        out.append(((" ".join(src), " ".join(tgt)), GoldPair(frozenset(moved), frozenset(moved))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="weights")
    parser.add_argument("--links", type=Path, required=True, help="scripts/silver_links.py's output for --data")
    parser.add_argument("--data", default=str(SHARED / "tatoeba-fra-eng" / "fra-eng.tsv"))
    parser.add_argument("--lines", default="1501-2000", help="1-based, inclusive")
    parser.add_argument("--join", default="1,2,4,8")
    parser.add_argument("--layer", type=int, help="counted from 1, -1 = the last (default: the model's stored rule)")
    parser.add_argument("--head", type=int, help="counted from 1 (default: the mean of the layer's heads)")
    parser.add_argument(
        "--full-context", action="store_true", help="read the unmasked pass (--align-full-context heads)"
    )
    args = parser.parse_args()

    lo, hi = map(int, args.lines.split("-"))
    pairs = [(p.src, p.tgt) for p in read_corpus(args.data)][lo - 1 : hi]
    links = read_links(args.links)[lo - 1 : hi]
    loaded = load_model(args.model)
    stored = load_rule(loaded.path)
    cfg = loaded.cfg
    head = None if args.head is None else head_index(args.head, cfg.h)
    at = None if args.layer is None else layer_index(args.layer, cfg.n_decoder_layers)
    rule = stored if at is None else AlignRule(at, head, full_context=args.full_context)
    print(f"{args.model} · {rule.describe(cfg.n_decoder_layers)} · lines {args.lines} of {Path(args.data).name}")
    print(f"{'pairs joined':>12} {'words (fr)':>10} {'AER':>6} {'precision':>9} {'recall':>7}")
    for n in map(int, args.join.split(",")):
        group = joined(pairs, links, n)
        att = pair_attention(loaded, [p for p, _ in group], full_context=rule.full_context)
        found = [{(i, j) for i, j, _ in ls} for ls in align(att, rule)]
        score = score_links(found, [g for _, g in group])
        words = statistics.mean(len(p[0].split()) for p, _ in group)
        print(
            f"{n:>12} {words:>10.1f} {100 * score.aer:>6.1f} {100 * score.precision:>9.1f} {100 * score.recall:>7.1f}"
        )


if __name__ == "__main__":
    main()
