"""How well a SentencePiece vocabulary fits the news sets: pieces per word on newstest2013/2012 and FLORES-101 dev.

The shipped model (runs/c2) kept the first model's 8k vocabulary, which was trained on Tatoeba
and Multi30k alone; this compares it with vocabularies trained on a sample of every corpus of the model issue's mix
(Europarl v7, Tatoeba, Multi30k, the WMT news training sets), so docs/model.md can say what a restart with a
balanced vocabulary would gain in sequence length. Fewer pieces per word: shorter sequences to train on and decode,
and fewer words split into fragments the model must put together.

    python scripts/vocab_fit.py                       # the shipped vocabulary against balanced 8k and 16k
    python scripts/vocab_fit.py --sizes 8000,16000,32000 --tokenizer weights/spm.model

The sample, both sides of: 120,000 Europarl pairs (drawn from its first 400,000), 100,000 Tatoeba pairs, all of
Multi30k train and the news training sets (not newstest2012/2013: those are what it measures on); with
--new-corpora also 120,000 Hansard pairs (of its first 400,000), all of the subtitles and UN sets, 30,000 of the
mixed pairs, and 60,000 sentences of each side of the monolingual news (mono/news.{en,fr}.xz: their first 200,000).
--byte-fallback trains each vocabulary with SentencePiece's byte fallback, and a last column counts the characters
each vocabulary maps to <unk> over the real-text lines (tests/fixtures/real_text.py) and the measured sets.

    python scripts/vocab_fit.py --new-corpora --byte-fallback --sizes 8000,16000 --save runs/vocab
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

from core.data.readers import Pair, ReadStats, read_corpus  # noqa: E402
from core.data.tokenizer import Tokenizer  # noqa: E402

NEWS_TRAIN = ("news-test2008", "newssyscomb2009", "newstest2009", "newstest2010", "newstest2011", "newsdiscusstest2015")
MEASURED = {
    "newstest2013": "news/newstest2013",
    "newstest2012": "news/newstest2012",
    "flores101-dev": "news/flores101-dev",
}


def sample(data: Path, seed: int, new_corpora: bool = False) -> list[str]:
    """Both sides of the sampled pairs, read as `tt train` reads the corpora (compressed files, prefixes, TSV)."""
    rng = random.Random(seed)

    def pairs(spec: Path, most: int | None = None) -> list[Pair]:
        return list(itertools.islice(read_corpus(spec, strict=False, stats=ReadStats()), most))

    europarl, tatoeba = pairs(data / "europarl/europarl-v7", 400_000), pairs(data / "tatoeba-fra-eng/fra-eng.tsv")
    rng.shuffle(europarl)
    chosen = europarl[:120_000] + rng.sample(tatoeba, min(100_000, len(tatoeba))) + pairs(data / "multi30k/train")
    chosen += [p for name in NEWS_TRAIN for p in pairs(data / "news" / name)]
    if not new_corpora:
        return [side for p in chosen for side in (p.src, p.tgt)]
    hansard, mixed = pairs(data / "hansard/hansard36", 400_000), pairs(data / "mixed/nlp-corpus")
    rng.shuffle(hansard)
    chosen += hansard[:120_000] + rng.sample(mixed, min(30_000, len(mixed)))
    chosen += pairs(data / "subtitles/opensubtitles-lcpt") + pairs(data / "un/unv1.0-devtest")
    mono = []
    for lang in ("en", "fr"):
        with lzma.open(data / f"mono/news.{lang}.xz", "rt", encoding="utf-8") as f:
            lines = [line.strip() for line in itertools.islice(f, 200_000)]
        mono += rng.sample(lines, min(60_000, len(lines)))
    return [side for p in chosen for side in (p.src, p.tgt)] + mono


def characters_lost(tokenizer: Tokenizer, lines: list[str]) -> int:
    """Characters of `lines` the vocabulary writes as <unk> (none with byte fallback)."""
    from core.model.config import UNK_ID

    return sum(
        len(piece.lstrip("▁"))
        for line in lines
        for i, piece in zip(tokenizer.encode(line), tokenizer.encode_pieces(line))
        if i == UNK_ID
    )


def pieces_per_word(tokenizer: Tokenizer, path: Path) -> float:
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(len(x) for x in tokenizer.encode_batch(lines)) / sum(len(x.split()) for x in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("TT_SHARED_DATA", "../shared/data"))
    ap.add_argument("--tokenizer", default="weights/spm.model", help="the vocabulary to compare against")
    ap.add_argument("--sizes", default="8000,16000", help="balanced vocabularies to train, comma-separated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--new-corpora", action="store_true", help="also sample hansard, subtitles, un, mixed, mono")
    ap.add_argument("--byte-fallback", action="store_true", help="train the vocabularies with byte fallback")
    ap.add_argument("--save", type=Path, help="write each trained vocabulary as DIR/balanced-<size>.model")
    args = ap.parse_args()
    data = Path(args.data)
    missing = [
        p for p in ["europarl/europarl-v7.fr.xz", *(f"{m}.en" for m in MEASURED.values())] if not (data / p).exists()
    ]
    if missing:
        sys.exit(f"vocab_fit: {data / missing[0]}: not found (--data or TT_SHARED_DATA names the shared data)")
    tokenizers = {f"{args.tokenizer}": Tokenizer.load(args.tokenizer)}
    lines = sample(data, args.seed, args.new_corpora)
    for size in (int(s) for s in args.sizes.split(",")):
        start = time.time()
        tk = Tokenizer.train(lines, size, max_sentences=len(lines), byte_fallback=args.byte_fallback)
        tokenizers[f"balanced {size // 1000}k"] = tk
        print(f"trained balanced {size} on {len(lines):,} lines in {time.time() - start:.0f} s", file=sys.stderr)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            tk.save(args.save / f"balanced-{size}.model")
    from tests.fixtures.real_text import CASES

    checked = [line for line, _ in CASES]
    checked += [
        x
        for p in MEASURED.values()
        for lang in ("fr", "en")
        for x in (data / f"{p}.{lang}").read_text(encoding="utf-8").splitlines()
    ]
    header = [f"{name} {lang}" for name in MEASURED for lang in ("fr", "en")]
    print("| vocabulary | size | " + " | ".join(header) + " | <unk> characters |")
    print("|---|---:|" + "---:|" * (len(header) + 1))
    for name, tk in tokenizers.items():
        cells = [f"{pieces_per_word(tk, data / f'{p}.{lang}'):.2f}" for p in MEASURED.values() for lang in ("fr", "en")]
        print(f"| {name} | {tk.vocab_size:,} | " + " | ".join(cells) + f" | {characters_lost(tk, checked):,} |")
    print("pieces per word (whitespace-separated words)", file=sys.stderr)


if __name__ == "__main__":
    main()
