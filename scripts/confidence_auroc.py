"""How well core.text's confidence signals rank bad translations: AUROC of each signal at telling
lines whose sentence chrF (sacreBLEU) is below a threshold, on newstest2013 (first 500 lines) and
the Tatoeba test split, shipped model, beam 4, core.text's default pipeline with cross-attention.

    python scripts/confidence_auroc.py [--news-lines 500] [--threshold 30 50] [--layer -1] [--model DIR]

AUROC 0.5 is chance; 1.0 ranks every bad line below every good one. A line's signal is the lowest of
its sentences'.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from text_eval_sets import dev_sets  # noqa: E402

from core.text.pipeline import translate_text, translator_batch  # noqa: E402
from core.text.protect import unknown_characters  # noqa: E402


def auroc(scores: list[float], bad: list[bool]) -> float:
    """P(a bad line scores lower than a good one), ties counted half (Mann–Whitney U)."""
    good_scores = [s for s, b in zip(scores, bad) if not b]
    bad_scores = [s for s, b in zip(scores, bad) if b]
    if not good_scores or not bad_scores:
        return float("nan")
    wins = 0.0
    for b in bad_scores:
        for g in good_scores:
            wins += 1.0 if b < g else 0.5 if b == g else 0.0
    return wins / (len(good_scores) * len(bad_scores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--news-lines", type=int, default=500)
    parser.add_argument("--threshold", type=float, nargs="+", default=[30.0, 50.0])
    parser.add_argument("--layer", type=int, default=-1, help="decoder layer whose cross-attention gives coverage")
    parser.add_argument("--tatoeba-lines", type=int, default=None, help="the split's first N pairs (default all)")
    parser.add_argument("--model", default=None)
    args = parser.parse_args()

    import torch
    from sacrebleu.metrics import CHRF

    from core import Translator

    torch.set_num_threads(1)  # as the tests do: reproducible, and kind to a shared machine

    translator = Translator(args.model)
    unknown = unknown_characters(translator.loaded.tokenizer)
    chrf = CHRF()
    print("| set | chrF below | bad lines | confidence | coverage | confidence × coverage |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (sources, refs) in dev_sets(args.news_lines, args.tatoeba_lines).items():
        results = translate_text(sources, translator_batch(translator, attention=True, layer=args.layer), None, unknown)
        kept = [(r, ref) for r, ref in zip(results, refs) if r.sentences]
        sent_chrf = [chrf.sentence_score(r.text, [ref]).score for r, ref in kept]
        conf = [min(s.confidence.sentence for s in r.sentences) for r, _ in kept]
        cov = [min(s.confidence.coverage for s in r.sentences) for r, _ in kept]
        both = [c * v for c, v in zip(conf, cov)]
        for threshold in args.threshold:
            bad = [c < threshold for c in sent_chrf]
            print(
                f"| {name} | {threshold:g} | {sum(bad)}/{len(bad)} | {auroc(conf, bad):.3f} | {auroc(cov, bad):.3f} "
                f"| {auroc(both, bad):.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
