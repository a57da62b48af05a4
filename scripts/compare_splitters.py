"""Compare tt's French sentence rules (core.text.split) with maintained splitters on the test list of
tests/core/text/split_cases.py: lines split exactly right, boundary precision and recall, time.

    python scripts/compare_splitters.py

pysbd and sentence-splitter are optional here (pip install pysbd sentence-splitter); a missing one is
reported and skipped.
"""

from __future__ import annotations

import time

from core.text.split import split_sentences
from tests.core.text.split_cases import CASES


def _boundaries(sentences: list[str]) -> set[int]:
    """Character offsets (in the line with whitespace removed) where each sentence but the last ends."""
    out, pos = set(), 0
    for s in sentences[:-1]:
        pos += len("".join(s.split()))
        out.add(pos)
    return out


def _splitters() -> dict:
    found = {"tt rules (core.text.split)": split_sentences}
    try:
        import pysbd

        seg = pysbd.Segmenter(language="fr", clean=False)
        found["pysbd 0.3 (fr)"] = lambda line: [s.strip() for s in seg.segment(line) if s.strip()]
    except ImportError:
        print("pysbd not installed: skipped")
    try:
        from sentence_splitter import SentenceSplitter

        ss = SentenceSplitter(language="fr")
        found["sentence-splitter 1.4 (fr)"] = lambda line: [s for s in ss.split(line) if s]
    except ImportError:
        print("sentence-splitter not installed: skipped")
    return found


def main() -> None:
    print(f"{len(CASES)} lines, {sum(len(c) for c in CASES)} sentences\n")
    print("| splitter | lines right | boundary precision | boundary recall | ms per line |")
    print("|---|---:|---:|---:|---:|")
    for name, split in _splitters().items():
        right = tp = n_pred = n_gold = 0
        started = time.perf_counter()
        misses = []
        for case in CASES:
            got = split(" ".join(case))
            gold, pred = _boundaries(case), _boundaries(got)
            right += got == case
            tp += len(gold & pred)
            n_pred += len(pred)
            n_gold += len(gold)
            if got != case:
                misses.append(got)
        ms = (time.perf_counter() - started) * 1000 / len(CASES)
        precision = tp / n_pred if n_pred else 1.0
        print(f"| {name} | {right}/{len(CASES)} | {precision:.3f} | {tp / n_gold:.3f} | {ms:.2f} |")
        for m in misses[:40]:
            print(f"<!-- {name} got: {m} -->")


if __name__ == "__main__":
    main()
