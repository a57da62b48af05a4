"""BLEU and chrF of the shipped model with core.text's splitting, protection and casing off and on
(sacreBLEU, beam 4), on newstest2013 (first 500 lines) and the Tatoeba test split.

    python scripts/text_bleu.py [--news-lines 500] [--news-set newstest2013] [--tatoeba-lines N] [--model DIR]
    python scripts/text_bleu.py --cli      # end to end: `tt translate --input` with and without
                                           # --no-split --no-protect, as a user runs it
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from text_eval_sets import dev_sets  # noqa: E402

from core.evaluate import corpus_scores  # noqa: E402
from core.text.pipeline import TextOptions, translate_text, translator_batch  # noqa: E402
from core.text.protect import SCHEMES, unknown_characters  # noqa: E402

RUNS = {
    "off (the model alone)": TextOptions(split=False, protect=False, case=False, follow_stop=False),
    "split + protect + case, numbers as placeholders (before)": TextOptions(
        scheme=SCHEMES["names"], fallbacks=(SCHEMES["names-kyoto"], SCHEMES["typed"]), names=False
    ),
    "split + protect + case, numbers copied": TextOptions(names=False),
    "split + protect + case, numbers and names copied (default)": TextOptions(),
}


CLI_RUNS = {
    "tt translate --no-split --no-protect": ["--no-split", "--no-protect"],
    "tt translate (default: split + protect)": [],
}


def cli_translate(sources: list[str], flags: list[str], model: str | None) -> tuple[list[str], int]:
    """`tt translate --input FILE --output FILE` in a child process: the outputs and the warnings it gave."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "src.fr", Path(tmp) / "out.en"
        src.write_text("".join(line + "\n" for line in sources), encoding="utf-8")
        cmd = [sys.executable, "-m", "tt_cli.main", "translate", "--threads", "1", "-i", str(src), "-o", str(out)]
        cmd += flags + (["--model", model] if model else [])
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
        lines = out.read_text(encoding="utf-8").split("\n")[:-1]
        # tt shows the first warnings and then a count of the rest: "tt: warning: N more warning(s) not shown"
        more = re.search(r"^tt: warning: (\d+) more warning", done.stderr, re.MULTILINE)
        shown = done.stderr.count("tt: warning:") - (1 if more else 0)
        return lines, shown + (int(more.group(1)) if more else 0)


def main_cli(args) -> None:
    print("| set | run | BLEU | chrF | warnings | seconds |")
    print("|---|---|---:|---:|---:|---:|")
    scores = None
    for name, run, flags, sources, refs in _runs(args, CLI_RUNS):
        started = time.perf_counter()
        outputs, warned = cli_translate(sources, flags, args.model)
        seconds = time.perf_counter() - started
        assert len(outputs) == len(sources), f"{len(outputs)} lines out for {len(sources)} in"
        scores = corpus_scores(outputs, [refs])
        print(f"| {name} | {run} | {scores.bleu:.2f} | {scores.chrf:.2f} | {warned} | {seconds:.0f} |", flush=True)
    print(f"\nBLEU signature: {scores.bleu_signature}")


def _runs(args, runs: dict):
    """(set name, run name, its settings, sources, references) for every set and run."""
    for name, (sources, refs) in dev_sets(args.news_lines, args.tatoeba_lines, args.news_set).items():
        for run, settings in runs.items():
            yield name, run, settings, sources, refs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--news-lines", type=int, default=500)
    parser.add_argument("--news-set", default="newstest2013", help="a set of ../shared/data/news (flores101-dev, …)")
    parser.add_argument(
        "--tatoeba-lines", type=int, default=None, help="the split's first N pairs (default all; 0: none)"
    )
    parser.add_argument("--model", default=None)
    parser.add_argument("--cli", action="store_true", help="through `tt translate` (on vs --no-split --no-protect)")
    args = parser.parse_args()
    if args.cli:
        return main_cli(args)

    import torch

    from core import Translator

    torch.set_num_threads(1)  # as the tests do: reproducible, and kind to a shared machine

    translator = Translator(args.model)
    unknown = unknown_characters(translator.loaded.tokenizer)
    print("| set | run | BLEU | chrF | lines split | spans protected | spans lost | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    scores = None
    for name, run, options, sources, refs in _runs(args, RUNS):
        started = time.perf_counter()
        results = translate_text(sources, translator_batch(translator), options, unknown)
        seconds = time.perf_counter() - started
        scores = corpus_scores([r.text for r in results], [refs])
        n_split = sum(len(r.sentences) > 1 for r in results)
        n_spans = sum(len(s.spans) for r in results for s in r.sentences)
        n_lost = sum(len(s.lost) for r in results for s in r.sentences)
        print(
            f"| {name} | {run} | {scores.bleu:.2f} | {scores.chrf:.2f} | {n_split} | {n_spans} | {n_lost} "
            f"| {seconds:.0f} |",
            flush=True,
        )
    print(f"\nBLEU signature: {scores.bleu_signature}")


if __name__ == "__main__":
    main()
