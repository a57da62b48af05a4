"""Fragments to train on: phrase pairs and headings without a verb or a stop (docs/fragments).

The shipped models learned from sentences and hallucinate on headings and labels (`Mot de passe oublié` →
"Motor is forgotten"; docs/fragments: BLEU 4 where sentences score 20–65). This writes fragment pairs to put in
a small share of a training round, from the same --data a run reads and their silver word links:

    python scripts/silver_links.py --data D/tatoeba-fra-eng/fra-eng.tsv --data runs/sl23/europarl-v7 \\
        --data D/subtitles/opensubtitles-lcpt --data runs/sl23/hansard36 --out runs/frag/links
    python scripts/fragments.py --data D/tatoeba-fra-eng/fra-eng.tsv --data runs/sl23/europarl-v7 \\
        --data D/subtitles/opensubtitles-lcpt --data runs/sl23/hansard36 --links runs/frag/links \\
        --out runs/frag/fragments            # runs/frag/fragments.fr, .en: --data runs/frag/fragments

- **phrase pairs** (Och & Ney 2004's consistent pairs): a run of 2–4 source words whose links all land inside
  one run of target words, and no target word inside it linked outside; counted over all pairs, lower-cased;
  each source phrase seen at least --min-count times keeps its most frequent English if that English is at
  least --min-share of its count (`mot de passe` → `password`). Written as a label is: first letter capital, no stop.
- **headings**: a pair whose source is at most six words with no final stop and no digit (`Heure des votes` /
  `Voting time`), no function word or comma at an edge, not a name's line (`M. …`, `L'hon. …`), not in capitals.

Every distinct pair once; the lines of docs/fragments (either side) are left out, so that set stays a yardstick.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.data.readers import read_corpus  # noqa: E402
from core.errors import DataError  # noqa: E402
from core.files import atomic_write_bytes  # noqa: E402
from core.train.align_loss import parse_links  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_STOP = ".!?:;…"
_EDGE = "\"'«»“”‘’()[],.!?:;…"  # punctuation taken off a phrase's first and last word
_NAME_LINE = re.compile(r"^(?:M\.|Mme|Mlle|L'hon\.|Le très hon\.|La très hon\.|Mr\.|Mrs\.|Ms\.|Hon\.|Right Hon\.)\s")


def phrase_pairs(src: list[str], tgt: list[str], links: set[tuple[int, int]], max_src: int = 4, max_tgt: int = 5):
    """The consistent phrase pairs (source start, end, target start, end; ends inclusive) of one sentence pair
    with 2..max_src source words: every link of the source run lands in the target run and every link into the
    target run comes from the source run. The target run is the tightest one (no unaligned words added)."""
    by_src: dict[int, list[int]] = defaultdict(list)
    by_tgt: dict[int, list[int]] = defaultdict(list)
    for i, j in links:
        by_src[i].append(j)
        by_tgt[j].append(i)
    out = []
    for a in range(len(src)):
        for b in range(a + 1, min(a + max_src, len(src))):
            targets = [j for i in range(a, b + 1) for j in by_src.get(i, ())]
            if not targets or not by_src.get(a) or not by_src.get(b):  # each end word aligned
                continue
            c, d = min(targets), max(targets)
            if d - c + 1 > max_tgt:
                continue
            if all(a <= i <= b for j in range(c, d + 1) for i in by_tgt.get(j, ())):
                out.append((a, b, c, d))
    return out


# A phrase that starts or ends on one of these is a piece of a clause, not a heading ("Plus cher et", "Et qui
# sait", "Relation entre l'union" / "Relationship between the european"): function words of each language.
_FR_NOT_LAST = set(
    "de du des la le les un une et ou à au aux par pour que qui en ne se ce sur dans avec mais plus très son sa ses "
    "leur leurs nos notre vos votre mon ma mes ton ta tes je tu il elle nous vous ils elles on y est a sont ont "
    "cette cet ces comme si pas entre sans sous vers chez".split()
)
_FR_NOT_FIRST = set("et ou mais qui que dont où donc car ne se y - pas a".split())
_EN_NOT_LAST = set(
    "a an the of to and or in on at for with by from that which who is are was were be my your his her its our "
    "their i we you he she it they as than not very more this these those between into about should would could "
    "can will has have had do does did".split()
)
_EN_NOT_FIRST = set("and or but which who that whom whose of - than".split())


def _clean(words: list[str]) -> str:
    """Words as one phrase, the punctuation at its two edges taken off."""
    return " ".join(" ".join(words).strip(_EDGE + " ").split())


def _whole(fr: str, en: str) -> bool:
    """Neither side starts or ends on a function word or a comma, both hold letters and no digit, and every
    bracket is closed."""
    f, e = fr.lower().split(), en.lower().split()
    if not f or not e or any(ch.isdigit() for ch in fr + en) or not any(ch.isalpha() for ch in fr + en):
        return False
    if fr[-1] in ",-" or en[-1] in ",-" or any(t.count("(") != t.count(")") for t in (fr, en)):
        return False
    return (
        f[0] not in _FR_NOT_FIRST
        and f[-1] not in _FR_NOT_LAST
        and e[0] not in _EN_NOT_FIRST
        and e[-1] not in _EN_NOT_LAST
    )


def label(text: str) -> str:
    """A phrase written as a heading or label is: first letter capital."""
    return text[:1].upper() + text[1:]


def count_phrases(pairs: Iterable[tuple[str, str]], links: Iterable[set[tuple[int, int]]]) -> tuple[Counter, dict]:
    """(source phrase, target phrase), lower-cased → how many sentence pairs hold it (each pair counts a phrase
    pair once), and each one's case as first written."""
    counts: Counter = Counter()
    cased: dict[tuple[str, str], tuple[str, str]] = {}
    for (s, t), ln in zip(pairs, links):
        src, tgt = s.split(), t.split()
        seen = set()
        for a, b, c, d in phrase_pairs(src, tgt, ln):
            fr, en = _clean(src[a : b + 1]), _clean(tgt[c : d + 1])
            if len(fr.split()) >= 2 and _whole(fr, en):
                key = (fr.lower(), en.lower())
                seen.add(key)
                cased.setdefault(key, (fr, en))  # a first word's capital is label()'s anyway
        counts.update(seen)
    return counts, cased


def best_phrases(counts: Counter, min_count: int, min_share: float) -> Iterator[tuple[str, str]]:
    """Each source phrase seen at least min_count times with its most frequent target, if that target holds at
    least min_share of the source's count."""
    by_src: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for (fr, en), n in counts.items():
        by_src[fr].append((n, en))
    for fr in sorted(by_src):
        options = by_src[fr]
        total = sum(n for n, _ in options)
        n, en = max(options, key=lambda x: (x[0], x[1]))
        if total >= min_count and n >= min_share * total:
            yield fr, en


def headings(pairs: Iterable[tuple[str, str]], max_words: int = 6) -> Iterator[tuple[str, str]]:
    """Pairs whose source is a heading: at most max_words words, no final stop, whole (no digit, no function word
    or comma at an edge, brackets closed), not a name's line, not in capitals (names lose their case there)."""
    for fr, en in pairs:
        fr, en = " ".join(fr.split()), " ".join(en.split())
        if not fr or not en or len(fr.split()) > max_words or len(en.split()) > max_words + 2:
            continue
        if fr[-1] in _STOP or en[-1] in _STOP or fr.isupper() or en.isupper() or not _whole(fr, en):
            continue
        if _NAME_LINE.match(fr) or _NAME_LINE.match(en):
            continue
        yield fr, en


def read_links(path: Path, pairs: list[tuple[str, str]]) -> list[set[tuple[int, int]]]:
    """Pharaoh links, line k for pair k (core.train.align_loss.parse_links, as tt train --align-links reads them);
    a line that is not, a link outside its pair, or another number of lines: SystemExit naming what is wrong."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for n, (line, (src, tgt)) in enumerate(zip(lines, pairs), 1):
        try:
            out.append(set(parse_links(line, len(src.split()), len(tgt.split()), f"{path}:{n}")))
        except DataError as e:
            sys.exit(f"fragments: {e}")
    if len(lines) != len(pairs):
        sys.exit(f"fragments: {path} holds {len(lines)} lines for {len(pairs)} pairs (link the same --data)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True, help="as tt train's --data (repeat), as linked")
    ap.add_argument("--links", type=Path, required=True, help="scripts/silver_links.py's output for the same --data")
    ap.add_argument("--out", type=Path, required=True, help="OUT.fr and OUT.en are written")
    ap.add_argument("--src-lang", default="fr")
    ap.add_argument("--tgt-lang", default="en")
    ap.add_argument("--min-count", type=int, default=5, help="sightings of a source phrase, at least")
    ap.add_argument("--min-share", type=float, default=0.5, help="share of them its English must hold, at least")
    ap.add_argument("--keep-out", type=Path, default=ROOT / "docs" / "fragments" / "fragments")
    args = ap.parse_args()
    pairs = [
        (p.src, p.tgt) for spec in args.data for p in read_corpus(spec, src_lang=args.src_lang, tgt_lang=args.tgt_lang)
    ]
    links = read_links(args.links, pairs)
    keep_out = set()
    for lang in (args.src_lang, args.tgt_lang):
        path = Path(f"{args.keep_out}.{lang}")
        if path.exists():
            keep_out |= {line.strip().lower() for line in path.read_text(encoding="utf-8").splitlines()}
    counts, cased = count_phrases(pairs, links)
    found = [tuple(map(label, cased[pair])) for pair in best_phrases(counts, args.min_count, args.min_share)]
    n_phrases = len(found)
    found += [(label(fr), label(en)) for fr, en in headings(pairs)]
    out, seen = [], set()
    for fr, en in found:
        if (fr, en) not in seen and fr.lower() not in keep_out and en.lower() not in keep_out:
            seen.add((fr, en))
            out.append((fr, en))
    for lang, side in ((args.src_lang, 0), (args.tgt_lang, 1)):
        atomic_write_bytes(Path(f"{args.out}.{lang}"), "".join(p[side] + "\n" for p in out).encode("utf-8"))
    print(
        f"{args.out}.{{{args.src_lang},{args.tgt_lang}}}: {len(out)} pairs ({n_phrases} phrase pairs)", file=sys.stderr
    )


if __name__ == "__main__":
    main()
