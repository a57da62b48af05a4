"""Sentences given as arguments: one thread against two, per shipped direction and precision.

`tt translate "…"` (and the REPL) translate a sentence at a time; for them `--threads 0` runs one thread
(tt_cli/options.py, `set_threads`), whatever the precision. This bench measures what that choice rests on: each
shipped model in fp32 and in int8, the same sentences translated one call each through `tt translate`'s
pipeline (core.api.Translator.translate_text: splitting, protection, beam 4 — the defaults), at one thread
and at two, best of --rounds whole passes in turn, in one process. The reference of each row is its own
one-thread pass; the ratio is sentences/s at two threads over one (> 1: two threads pay).

    python bench/bench_threads.py --sentences 60 --rounds 3

Sentences (--corpus): news, the first --sentences lines of each direction's source side of newstest2013
(the dev set, ~18 words a sentence); tatoeba, --sentences of Tatoeba's pairs spread over its lengths
(everyday sentences, ~6 words). From ../shared/data when present, else the source side of
tests/fixtures/tiny.tsv (fr→en only). The GOMP_SPINCOUNT every tt command sets (tt_cli/__init__.py) is set
before torch loads.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def source_lines(corpus: str, source: str, n: int) -> list[str]:
    """n source-side sentences: newstest2013's first (news length), or Tatoeba's spread over its lengths."""
    shared = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if corpus == "news" and (shared / "news" / f"newstest2013.{source}").exists():
        return (shared / "news" / f"newstest2013.{source}").read_text(encoding="utf-8").splitlines()[:n]
    tatoeba = shared / "tatoeba-fra-eng" / "fra-eng.tsv"
    if corpus == "tatoeba" and tatoeba.exists():
        pairs = [line.split("\t") for line in tatoeba.read_text(encoding="utf-8").splitlines()]
        column = 0 if source == "fr" else 1  # French first; the file runs from short to long
        return [pair[column] for pair in pairs[:: max(1, len(pairs) // n)]][:n]
    if source != "fr":
        return []
    fixture = (ROOT / "tests" / "fixtures" / "tiny.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[0] for line in fixture][:n]


def one_pass(translator, lines: list[str]) -> float:
    start = time.perf_counter()
    for line in lines:
        translator.translate_text([line])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=60)
    parser.add_argument("--corpus", choices=("news", "tatoeba"), default="news", help="the sentences' kind")
    parser.add_argument("--rounds", type=int, default=3, help="whole passes per row; the best counts")
    args = parser.parse_args()

    import tt_cli  # noqa: F401 — sets the OpenMP wait every tt command runs with, before torch loads

    # isort: split
    import torch

    from core import Translator
    from core.device import describe_cpu

    print(f"CPU: {describe_cpu()}; torch {torch.__version__}; GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows = []
    for source, target, model in (("fr", "en", ROOT / "weights"), ("en", "fr", ROOT / "weights" / "en-fr")):
        lines = source_lines(args.corpus, source, args.sentences)
        if not lines or not (model / "model.safetensors").exists():
            continue
        for precision in ("fp32", "int8"):
            translator = Translator(model, quantize=None if precision == "fp32" else precision)
            best = {1: float("inf"), 2: float("inf")}
            for threads in (1, 2):  # warm each thread count once (pool start-up, allocator, lazy imports)
                torch.set_num_threads(threads)
                one_pass(translator, lines[:5])
            for _ in range(args.rounds):
                for threads in (1, 2):
                    torch.set_num_threads(threads)
                    best[threads] = min(best[threads], one_pass(translator, lines))
            rates = {t: len(lines) / s for t, s in best.items()}
            rows.append((f"{source}→{target}", precision, len(lines), rates[1], rates[2], rates[2] / rates[1]))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print()
    print("| model | precision | sentences | 1 thread sent/s | 2 threads sent/s | 2 / 1 |")
    print("|---|---|---:|---:|---:|---:|")
    for name, precision, n, one, two, ratio in rows:
        print(f"| {name} | {precision} | {n} | {one:.1f} | {two:.1f} | **{ratio:.2f}×** |")


if __name__ == "__main__":
    main()
