"""Alignment links as sets, and how good they are: gold links, AER, symmetrization, a diagonal baseline.

A link is (i, j): source word i, target word j, both 0-based — the Pharaoh convention ("i-j").
Nothing here needs a model; `core.align.links` produces links from one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import DataError

Links = set[tuple[int, int]]


@dataclass(frozen=True)
class GoldPair:
    sure: frozenset[tuple[int, int]]
    possible: frozenset[tuple[int, int]]  # includes every sure link


@dataclass(frozen=True)
class AlignmentScore:
    """Och & Ney (2003), summed over the corpus: AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|)."""

    aer: float
    precision: float  # |A∩P| / |A|
    recall: float  # |A∩S| / |S|
    predicted: int  # |A|
    sure: int  # |S|
    possible: int  # |P|

    def summary(self) -> str:
        return (
            f"AER {100 * self.aer:.1f}  precision {100 * self.precision:.1f}  recall {100 * self.recall:.1f}  "
            f"({self.predicted} links; gold {self.sure} sure, {self.possible} possible)"
        )


def read_gold(path: str | Path, lengths: Sequence[tuple[int, int]], *, target_first: bool = True) -> list[GoldPair]:
    """Gold links in the HLT-NAACL 2003 workshop format, one per line: SENTENCE POS POS S|P (1-based).

    `lengths` holds (source words, target words) of each pair; sentence k is pair k-1. The workshop's
    English–French files put the English position first; English is tt's target, so target_first.
    Every line is checked against the pair it names: a file for other sentences, or with its
    columns the other way round, fails with file:line instead of scoring nonsense.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such gold file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the gold links ({exc})") from None
    sure: list[set] = [set() for _ in lengths]
    possible: list[set] = [set() for _ in lengths]
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if (
            len(fields) not in (3, 4)
            or not all(f.isdigit() for f in fields[:3])
            or (len(fields) == 4 and fields[3] not in "SP")
        ):
            raise DataError(f"{path}:{lineno}: expected 'SENTENCE POS POS S|P' (1-based numbers), got {line.strip()!r}")
        k, a, b = (int(f) for f in fields[:3])
        tgt_pos, src_pos = (a, b) if target_first else (b, a)
        if not 1 <= k <= len(lengths):
            raise DataError(f"{path}:{lineno}: sentence {k}, but there are {len(lengths)} sentence pairs")
        n_src, n_tgt = lengths[k - 1]
        if not (1 <= src_pos <= n_src and 1 <= tgt_pos <= n_tgt):
            raise DataError(
                f"{path}:{lineno}: link source {src_pos} - target {tgt_pos}, but pair {k} has {n_src} source and "
                f"{n_tgt} target words (is the file for these sentences, with the target position first?)"
            )
        link = (src_pos - 1, tgt_pos - 1)
        possible[k - 1].add(link)
        if len(fields) == 3 or fields[3] == "S":  # no S|P column: a sure link, as in most aligners' output
            sure[k - 1].add(link)
    return [GoldPair(frozenset(s), frozenset(p)) for s, p in zip(sure, possible)]


def score_links(predicted: Sequence[Iterable[tuple[int, int]]], gold: Sequence[GoldPair]) -> AlignmentScore:
    """AER, precision and recall of predicted links against gold, counts summed over all pairs."""
    if len(predicted) != len(gold):
        raise DataError(f"{len(predicted)} predicted alignments for {len(gold)} gold ones")
    a = s = p = a_s = a_p = 0
    for links, g in zip(predicted, gold):
        links = set(links)
        a, s, p = a + len(links), s + len(g.sure), p + len(g.possible)
        a_s, a_p = a_s + len(links & g.sure), a_p + len(links & g.possible)
    aer = 1.0 - (a_s + a_p) / (a + s) if a + s else 0.0
    return AlignmentScore(aer, a_p / a if a else 0.0, a_s / s if s else 0.0, a, s, p)


# --------------------------------------------------------------------------------------- symmetrization
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


SYMMETRIZATIONS = ("intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and")


def symmetrize(forward: Links, reverse: Links, method: str = "grow-diag-final") -> Links:
    """Combine source→target and target→source links (both as (source i, target j)).

    intersection: precise, sparse. union: the opposite. grow-diag (Koehn et al. 2003, as in Moses):
    start from the intersection, add union links next to a link (diagonals included) that cover a
    word not yet aligned. grow-diag-final then adds any union link whose source or target word is
    still unaligned; grow-diag-final-and only those whose source and target words both are.
    """
    forward, reverse = set(forward), set(reverse)
    if method == "intersection":
        return forward & reverse
    if method == "union":
        return forward | reverse
    if method not in SYMMETRIZATIONS:
        raise DataError(f"unknown symmetrization {method!r} ({', '.join(SYMMETRIZATIONS)})")
    union = forward | reverse
    links = forward & reverse
    src_done = {i for i, _ in links}
    tgt_done = {j for _, j in links}

    def add(i: int, j: int) -> None:
        links.add((i, j))
        src_done.add(i)
        tgt_done.add(j)

    grew = True
    while grew:  # grow-diag
        grew = False
        for i, j in sorted(links):
            for di, dj in _NEIGHBOURS:
                n = (i + di, j + dj)
                if n in union and n not in links and (n[0] not in src_done or n[1] not in tgt_done):
                    add(*n)
                    grew = True
    if method == "grow-diag":
        return links
    for i, j in sorted(union):  # final: a word still unaligned (-and: both words)
        unaligned = (i not in src_done, j not in tgt_done)
        if (i, j) not in links and (all(unaligned) if method == "grow-diag-final-and" else any(unaligned)):
            add(i, j)
    return links


def diagonal_links(n_src: int, n_tgt: int) -> Links:
    """The baseline that knows nothing: target word j links to the source word at the same relative position."""
    if not n_src:
        return set()
    return {(min(n_src - 1, int((j + 0.5) * n_src / n_tgt)), j) for j in range(n_tgt)}


def pharaoh(links: Iterable[tuple[int, int]]) -> str:
    """'i-j i-j …' sorted by source then target word: one Pharaoh line."""
    return " ".join(f"{i}-{j}" for i, j in sorted(links))
