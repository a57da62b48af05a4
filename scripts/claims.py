"""Run the notes' claims on a model and print the table (until `tt analyze claims` exists).

    python scripts/claims.py                                   # the shipped model, Tatoeba held-out test
    python scripts/claims.py --model runs/mine --json          # one JSON object per claim
    python scripts/claims.py --set newstest2013 --limit 500    # the quality claims on news text
    python scripts/claims.py --no-timing --set none            # model-only claims, fast

The held-out sets are read from ../shared/data at run time (never copied into the repository):
Tatoeba's test buckets [10, 25) of core.data.readers.heldout_bucket, or newstest2013.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def held_out(name: str, limit: int) -> list[tuple[str, str]]:
    from core.data.readers import heldout_range, read_corpus

    if name == "none":
        return []
    if name == "tatoeba":
        pairs = [(p.src, p.tgt) for p in heldout_range(read_corpus(DATA / "tatoeba-fra-eng" / "fra-eng.tsv"), 10, 25)]
    elif name == "newstest2013":
        base = DATA / "news" / "newstest2013"
        with open(f"{base}.fr", encoding="utf-8") as fr, open(f"{base}.en", encoding="utf-8") as en:
            pairs = [(s.strip(), t.strip()) for s, t in zip(fr, en)]
    else:
        raise SystemExit(f"claims.py: unknown --set {name!r}; use tatoeba, newstest2013 or none")
    return pairs[:limit] if limit else pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: $TT_MODEL, else the shipped model)")
    parser.add_argument("--set", default="tatoeba", help="tatoeba, newstest2013 or none")
    parser.add_argument("--limit", type=int, default=0, help="use the first N pairs of the set (0: all)")
    parser.add_argument(
        "--no-timing", action="store_true", help="skip the two cost claims (counted, with wall-clock beside)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per claim")
    args = parser.parse_args()

    import torch

    from core.analysis.claims import all_claims
    from core.checkpoint import load_model
    from core.errors import TTError

    torch.set_num_threads(1)  # timings comparable across runs on a shared machine
    try:
        loaded = load_model(args.model)
        pairs = held_out(args.set, args.limit)
    except (TTError, OSError) as exc:
        print(f"claims.py: {exc}", file=sys.stderr)
        return 1
    for claim in all_claims(loaded, pairs, set_name=args.set, timing=not args.no_timing):
        if args.json:
            print(json.dumps(claim.to_dict(), ensure_ascii=False))
        else:
            print(f"{claim.verdict.upper():14} {claim.key}: {claim.claim}\n{'':15}{claim.figure}\n{'':15}({claim.why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
