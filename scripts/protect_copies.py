"""Count how many things the shipped model copies right, with each placeholder scheme and without
protection, on the copy list of tests/core/text/copy_cases.py (through core.text.pipeline and
core.Translator, beam 4).

    python scripts/protect_copies.py [--model DIR] [--show]
"""

from __future__ import annotations

import argparse

from core.text.pipeline import TextOptions, translate_text, translator_batch
from core.text.protect import SCHEMES, unknown_characters
from tests.core.text.copy_cases import COPY_CASES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--show", action="store_true", help="print the translations that miss a copy")
    args = parser.parse_args()

    from core import Translator

    translator = Translator(args.model)
    unknown = unknown_characters(translator.loaded.tokenizer)
    lines = [src for src, _ in COPY_CASES]
    n_items = sum(len(want) for _, want in COPY_CASES)
    runs = {"no protection": TextOptions(protect=False)}
    runs.update({f"placeholders: {name}": TextOptions(scheme=scheme, fallbacks=()) for name, scheme in SCHEMES.items()})
    runs["tt's default: numbers copied, then names, names-kyoto, typed on a loss"] = TextOptions()
    print(f"{len(lines)} sentences, {n_items} things to copy\n")
    print("| run | copies right | sentences with every copy | reported lost |")
    print("|---|---:|---:|---:|")
    for name, options in runs.items():
        results = translate_text(lines, translator_batch(translator), options, unknown)
        right = whole = lost = 0
        misses = []
        for r, (_, want) in zip(results, COPY_CASES):
            hits = sum(w in r.text for w in want)
            right += hits
            whole += hits == len(want)
            lost += sum(len(s.lost) for s in r.sentences)
            if hits < len(want):
                misses.append(f"{r.source!r} -> {r.text!r}")
        print(f"| {name} | {right}/{n_items} | {whole}/{len(lines)} | {lost} |")
        if args.show:
            for m in misses:
                print(f"<!-- {name}: {m} -->")


if __name__ == "__main__":
    main()
