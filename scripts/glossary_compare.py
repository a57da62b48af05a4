"""Glossary terms forced three ways, on the small test set of tests/core/text/glossary_cases.py:
lexically constrained decoding (tt translate's way), placeholder substitution (a translator without it),
an n-best filter (beam 8: the best hypothesis that holds every term's English, else the best), and the
model alone. Term accuracy and BLEU.

    python scripts/glossary_compare.py [--model DIR]
"""

from __future__ import annotations

import argparse

from core.evaluate import corpus_scores
from core.text.pipeline import TextOptions, translate_text, translator_batch
from tests.core.text.glossary_cases import CASES, TERMS


def _wanted(source: str) -> list[str]:
    return [en for fr, en in TERMS if fr.lower() in source.lower()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    args = parser.parse_args()

    from core import Translator
    from core.api import text_constrained

    translator = Translator(args.model)
    sources, refs = [s for s, _ in CASES], [r for _, r in CASES]
    outputs = {
        "model alone": [r.text for r in translate_text(sources, translator_batch(translator))],
        "placeholders (core.text)": [
            r.text for r in translate_text(sources, translator_batch(translator), TextOptions(terms=TERMS))
        ],
        "constrained decoding (core.decode.constrained)": [
            r.text
            for r in translate_text(
                sources,
                translator_batch(translator),
                TextOptions(terms=TERMS),
                constrained=text_constrained(translator.loaded, translator.options),
            )
        ],
    }
    filtered = []
    for src, result in zip(sources, translator.translate(sources, beam=8, n_best=8)):
        want = _wanted(src)
        keep = next((a.text for a in result.n_best if all(w.lower() in a.text.lower() for w in want)), result.text)
        filtered.append(keep)
    outputs["n-best filter (beam 8)"] = filtered
    n_terms = sum(len(_wanted(s)) for s in sources)
    print(f"{len(sources)} sentences, {n_terms} term occurrences\n")
    print("| method | terms right | BLEU | chrF |")
    print("|---|---:|---:|---:|")
    for name, hyps in outputs.items():
        right = sum(w.lower() in h.lower() for s, h in zip(sources, hyps) for w in _wanted(s))
        scores = corpus_scores(hyps, [refs])
        print(f"| {name} | {right}/{n_terms} | {scores.bleu:.1f} | {scores.chrf:.1f} |")


if __name__ == "__main__":
    main()
