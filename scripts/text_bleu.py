"""BLEU and chrF of the shipped model with core.text's splitting, protection and casing off and on
(sacreBLEU, beam 4), on newstest2013 (first 500 lines) and the Tatoeba test split.

    python scripts/text_bleu.py [--news-lines 500] [--model DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from text_eval_sets import dev_sets  # noqa: E402

from core.evaluate import corpus_scores  # noqa: E402
from core.text.pipeline import TextOptions, translate_text, translator_batch  # noqa: E402
from core.text.protect import unknown_characters  # noqa: E402

RUNS = {
    "off (the model alone)": TextOptions(split=False, protect=False, case=False, follow_stop=False),
    "split": TextOptions(protect=False, case=False, follow_stop=False),
    "split + protect + case (default)": TextOptions(),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--news-lines", type=int, default=500)
    parser.add_argument("--tatoeba-lines", type=int, default=None, help="the split's first N pairs (default all)")
    parser.add_argument("--model", default=None)
    args = parser.parse_args()

    import torch

    from core import Translator

    torch.set_num_threads(1)  # as the tests do: reproducible, and kind to a shared machine

    translator = Translator(args.model)
    unknown = unknown_characters(translator.loaded.tokenizer)
    print("| set | run | BLEU | chrF | lines split | spans protected | spans lost | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    signature = ""
    for name, (sources, refs) in dev_sets(args.news_lines, args.tatoeba_lines).items():
        for run, options in RUNS.items():
            started = time.perf_counter()
            results = translate_text(sources, translator_batch(translator), options, unknown)
            seconds = time.perf_counter() - started
            scores = corpus_scores([r.text for r in results], [refs])
            signature = scores.bleu_signature
            n_split = sum(len(r.sentences) > 1 for r in results)
            n_spans = sum(len(s.spans) for r in results for s in r.sentences)
            n_lost = sum(len(s.lost) for r in results for s in r.sentences)
            print(
                f"| {name} | {run} | {scores.bleu:.2f} | {scores.chrf:.2f} | {n_split} | {n_spans} | {n_lost} "
                f"| {seconds:.0f} |",
                flush=True,
            )
    print(f"\nBLEU signature: {signature}")


if __name__ == "__main__":
    main()
