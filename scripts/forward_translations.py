"""The synthetic pairs of the model issue's continuations (docs/model.md, sessions 22–23): news drawn from
`mono/`, parliament slices, and the filter that turns a model's reranked translations into two training sets.

    python scripts/forward_translations.py news fr 270001 300000 runs/ft1/src.fr   # French news, seed-41 order
    python scripts/forward_translations.py news en 1 25000 runs/ft2/src.en         # English news, seed-42 order
    python scripts/forward_translations.py slice ../shared/data/europarl/europarl-v7 runs/sl/europarl-v7 200000 7
    tt translate --from fr --to en --raw --no-split --rerank --json --batch-size 32 --threads 1 \\
        -i runs/ft1/src.fr > runs/ft1/out.jsonl
    python scripts/forward_translations.py filter runs/ft1/src.fr runs/ft1/out.jsonl fr en 0.7 runs/ft1

`news` numbers lines from 1, both ends included, in a fixed shuffle of each file: French news (`news.fr.xz`)
shuffled with seed 41 (session 17's back-translation order); English news (`news.en.xz`) without its last
149,714 lines (the WMT news sides and BBC that bt2/bt5 drew from) shuffled with seed 42. Disjoint ranges never
share a line's position, so each session takes the next range.

`filter` reads the source lines and `tt translate --json` records (their `index` is the source line; a run that was
cut short is resumed on the lines after its last whole record, `tail -n +N`, and its file named after the first:
each file's indexes continue after the records before it, and a record cut short at a stop is dropped) and writes
- `bt.SRC` / `bt.TGT`: **back-translation** for the other direction: every output that passes the checks, tagged
  `<BT>` (Caswell et al. 2019) as that direction's source, the real sentence as its target;
- `ft.SRC` / `ft.TGT`: **forward translation** (self-training) for this direction: the real source, its
  translation as target, the best `keep` share by the model's mean log-probability per piece.
The checks drop empty or truncated outputs, a character-length ratio outside 0.5–2, outputs whose word trigrams
repeat (fewer than 80 % distinct), outputs with a character repeated 10 times or more in a row that the source does
not repeat so (a rule of dashes the model ran on with: 38 of session 32's 19,940 back-translations of French news)
and lines with a tab (the corpus readers' column separator).
"""

from __future__ import annotations

import argparse
import lzma
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.data.readers import Pair, write_aligned  # noqa: E402
from core.errors import DataError  # noqa: E402
from core.files import atomic_write_bytes, read_jsonl  # noqa: E402

MONO = ROOT.parent / "shared" / "data" / "mono"
# language -> (file, lines dropped from its end, shuffle seed)
NEWS_ORDER = {"fr": ("news.fr.xz", 0, 41), "en": ("news.en.xz", 149_714, 42)}


def news_lines(lang: str, first: int, last: int, mono: Path = MONO) -> list[str]:
    """Lines first..last (from 1, inclusive) of `lang`'s news in its fixed shuffle."""
    name, dropped, seed = NEWS_ORDER[lang]
    lines = lzma.open(mono / name, "rt", encoding="utf-8").read().splitlines()
    if dropped:
        lines = lines[:-dropped]
    random.Random(seed).shuffle(lines)
    return lines[first - 1 : last]


def slice_pairs(corpus: str, n: int, seed: int) -> list[Pair]:
    """A random sample of n (French, English) pairs of CORPUS.{fr,en}.xz, in corpus order."""
    sides = {
        lang: lzma.open(f"{corpus}.{lang}.xz", "rt", encoding="utf-8").read().splitlines() for lang in ("fr", "en")
    }
    if len(sides["fr"]) != len(sides["en"]):
        raise SystemExit(f"{corpus}: {len(sides['fr'])} French lines but {len(sides['en'])} English")
    picked = sorted(random.Random(seed).sample(range(len(sides["fr"])), n))
    return [Pair(sides["fr"][i], sides["en"][i], f"{corpus}:{i + 1}") for i in picked]


# A character 10 times or more in a row (the whole run): an output the model ran on with, unless the source has it.
REPEATED = re.compile(r"((.)\2{9,})")


def passes(source: str, record: dict) -> bool:
    """The checks every kept output passes (module docstring)."""
    text = record["translation"].strip()
    words = text.split()
    trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return bool(
        text
        and not record.get("truncated")
        and 0.5 <= len(text) / max(1, len(source)) <= 2.0
        and not (trigrams and len(set(trigrams)) < 0.8 * len(trigrams))
        and not any(m.group(1) not in source for m in REPEATED.finditer(text))
        and "\t" not in source + text
    )


def read_records(paths: list[Path], n_sources: int) -> list[dict]:
    """The records of `tt translate --json` files that translated one source file in turn: each file's indexes
    shifted past the source lines before it (a resumed run numbers its lines from 0). A last line cut short by a
    stop is dropped (and said); a broken line elsewhere, or an index out of order or past the sources, is an error."""
    records: list[dict] = []
    for path in paths:
        offset = records[-1]["index"] + 1 if records else 0
        lines, cut = read_jsonl(path)
        if cut:
            print(f"{path}: its last record was cut short, dropped", file=sys.stderr)
        for number, record in lines:
            index = record["index"] + offset
            if index >= n_sources or (records and index <= records[-1]["index"]):
                where = f"past the {n_sources} source lines" if index >= n_sources else "not after the record before"
                raise ValueError(f"{path}:{number}: index {record['index']} (source line {index + 1}) is {where}")
            records.append({**record, "index": index})
    return records


def split_sets(sources: list[str], records: list[dict], keep: float) -> tuple[list[Pair], list[Pair]]:
    """(back-translated pairs, forward pairs) as (source, translation): every output that passes, and the best
    `keep` share of them by mean log-probability per piece, best first."""
    scored = []
    for record in records:
        source = sources[record["index"]]
        if passes(source, record):
            mean = record["logprob"] / max(1, len(record["token_logprobs"]))
            scored.append((mean, Pair(source, record["translation"].strip(), f"line {record['index'] + 1}")))
    scored.sort(key=lambda c: -c[0])
    every = [pair for _, pair in scored]
    return every, every[: int(len(every) * keep)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    news = commands.add_parser("news", help="a range of one language's shuffled news lines")
    news.add_argument("lang", choices=sorted(NEWS_ORDER))
    news.add_argument("first", type=int)
    news.add_argument("last", type=int)
    news.add_argument("out", type=Path)
    cut = commands.add_parser("slice", help="a random sample of a parallel corpus (CORPUS.fr.xz, CORPUS.en.xz)")
    cut.add_argument("corpus")
    cut.add_argument("out", help="writes OUT.fr and OUT.en")
    cut.add_argument("n", type=int)
    cut.add_argument("seed", type=int)
    filt = commands.add_parser("filter", help="a model's translations -> back-translated and forward sets")
    filt.add_argument("source", type=Path)
    filt.add_argument(
        "jsonl",
        type=Path,
        nargs="+",
        help="tt translate --json output for SOURCE; more files: a cut run resumed on the lines after it, in order",
    )
    filt.add_argument("src_lang")
    filt.add_argument("tgt_lang")
    filt.add_argument("keep", type=float, help="share of the passing outputs kept as forward pairs (0–1)")
    filt.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)

    if args.command == "news":
        if not 1 <= args.first <= args.last:
            parser.error(f"lines run from 1 and first ≤ last, got {args.first}..{args.last}")
        lines = news_lines(args.lang, args.first, args.last)
        atomic_write_bytes(args.out, "".join(line + "\n" for line in lines).encode("utf-8"))
    elif args.command == "slice":
        write_aligned(slice_pairs(args.corpus, args.n, args.seed), f"{args.out}.fr", f"{args.out}.en")
    else:
        if not 0.0 <= args.keep <= 1.0:
            parser.error(f"keep is a share between 0 and 1, got {args.keep}")
        sources = args.source.read_text(encoding="utf-8").splitlines()
        try:
            records = read_records(args.jsonl, len(sources))
        except (ValueError, DataError) as exc:
            raise SystemExit(f"forward_translations.py: {exc}") from None
        back, forward = split_sets(sources, records, args.keep)
        s, t, out = args.src_lang, args.tgt_lang, args.out_dir
        tagged = [Pair(p.src, "<BT> " + p.tgt, p.origin) for p in back]  # the other direction's source, tagged
        write_aligned(tagged, out / f"bt.{s}", out / f"bt.{t}")
        write_aligned(forward, out / f"ft.{s}", out / f"ft.{t}")
        print(f"{len(records)} translations: {len(back)} back-translated pairs, {len(forward)} forward pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
