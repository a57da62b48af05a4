"""How well a SentencePiece vocabulary fits the news sets: pieces per word on newstest2013/2012 and FLORES-101 dev.

The model in training (runs/c2, weights/next) kept the shipped model's 8k vocabulary, which was trained on Tatoeba
and Multi30k alone; this compares it with vocabularies trained on a sample of every corpus of the model issue's mix
(Europarl v7, Tatoeba, Multi30k, the WMT news training sets), so docs/model.md can say what a restart with a
balanced vocabulary would gain in sequence length. Fewer pieces per word: shorter sequences to train on and decode,
and fewer words split into fragments the model must put together.

    python scripts/vocab_fit.py                       # weights/next's vocabulary against balanced 8k and 16k
    python scripts/vocab_fit.py --sizes 8000,16000,32000 --tokenizer weights/spm.model

The sample: 120,000 lines of each Europarl side (drawn from its first 400,000), 100,000 Tatoeba pairs, all of
Multi30k train and the news training sets (not newstest2012/2013: those are what it measures on).
"""

from __future__ import annotations

import argparse
import itertools
import lzma
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.data.tokenizer import Tokenizer  # noqa: E402

NEWS_TRAIN = ("news-test2008", "newssyscomb2009", "newstest2009", "newstest2010", "newstest2011", "newsdiscusstest2015")
MEASURED = {
    "newstest2013": "news/newstest2013",
    "newstest2012": "news/newstest2012",
    "flores101-dev": "news/flores101-dev",
}


def sample(data: Path, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines: list[str] = []
    for side in ("fr", "en"):
        with lzma.open(data / f"europarl/europarl-v7.{side}.xz", "rt", encoding="utf-8") as f:
            head = [x.strip() for x in itertools.islice(f, 400_000) if x.strip()]
        rng.shuffle(head)
        lines += head[:120_000]
    rows = [x.rstrip("\n").split("\t") for x in (data / "tatoeba-fra-eng/fra-eng.tsv").open(encoding="utf-8")]
    lines += [s for row in rng.sample(rows, min(100_000, len(rows))) for s in row[:2]]
    for side in ("fr", "en"):
        lines += (data / f"multi30k/train.{side}").read_text(encoding="utf-8").splitlines()
        for name in NEWS_TRAIN:
            lines += (data / f"news/{name}.{side}").read_text(encoding="utf-8").splitlines()
    return lines


def pieces_per_word(tokenizer: Tokenizer, path: Path) -> float:
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(len(x) for x in tokenizer.encode_batch(lines)) / sum(len(x.split()) for x in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("TT_SHARED_DATA", "../shared/data"))
    ap.add_argument("--tokenizer", default="weights/next/spm.model", help="the vocabulary to compare against")
    ap.add_argument("--sizes", default="8000,16000", help="balanced vocabularies to train, comma-separated")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    data = Path(args.data)
    missing = [
        p for p in ["europarl/europarl-v7.fr.xz", *(f"{m}.en" for m in MEASURED.values())] if not (data / p).exists()
    ]
    if missing:
        sys.exit(f"vocab_fit: {data / missing[0]}: not found (--data or TT_SHARED_DATA names the shared data)")
    tokenizers = {f"{args.tokenizer}": Tokenizer.load(args.tokenizer)}
    lines = sample(data, args.seed)
    for size in (int(s) for s in args.sizes.split(",")):
        start = time.time()
        tokenizers[f"balanced {size // 1000}k"] = Tokenizer.train(lines, size, max_sentences=len(lines))
        print(f"trained balanced {size} on {len(lines):,} lines in {time.time() - start:.0f} s", file=sys.stderr)
    header = [f"{name} {lang}" for name in MEASURED for lang in ("fr", "en")]
    print("| vocabulary | size | " + " | ".join(header) + " |")
    print("|---|---:|" + "---:|" * len(header))
    for name, tk in tokenizers.items():
        cells = [f"{pieces_per_word(tk, data / f'{p}.{lang}'):.2f}" for p in MEASURED.values() for lang in ("fr", "en")]
        print(f"| {name} | {tk.vocab_size:,} | " + " | ".join(cells) + " |")
    print("pieces per word (whitespace-separated words)", file=sys.stderr)


if __name__ == "__main__":
    main()
