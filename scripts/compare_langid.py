"""Compare language-identification libraries on short French and English sentences: is each sentence
called French or English rightly, and how fast. What chose core.text.language's library (docs/serve.md).

    python scripts/compare_langid.py [--n 1000]

Sets (from ../shared/data): Tatoeba's short everyday sentences (both sides, a seeded sample), Tatoeba's
pairs whose sides both have 20 characters or less, the two sides of newstest2013, and docs/everyday
(both sides; a few words per line). Each library is asked in
two ways: "open" (among every language it knows: a French sentence called Catalan is wrong) and "fr/en"
(restricted to the two, where the library can be restricted). A library that is not installed is
reported and skipped (pip install lingua-language-detector py3langid langid langdetect).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED_DATA = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _sets(n: int) -> dict[str, list[tuple[str, str]]]:
    """name → [(text, "fr" | "en")]; n sentences of each language per set (seeded)."""
    rng = random.Random(0)
    pairs = [
        line.split("\t")[:2]
        for line in (SHARED_DATA / "tatoeba-fra-eng" / "fra-eng.tsv").read_text(encoding="utf-8").splitlines()
    ]
    pairs = [p for p in pairs if len(p) == 2]
    tatoeba = rng.sample(pairs, n)
    short = rng.sample([(f, e) for f, e in pairs if len(f) <= 20 and len(e) <= 20], n)
    news = SHARED_DATA / "news"
    fr = (news / "newstest2013.fr").read_text(encoding="utf-8").splitlines()
    en = (news / "newstest2013.en").read_text(encoding="utf-8").splitlines()
    picked = rng.sample(range(len(fr)), min(n, len(fr)))
    everyday = ROOT / "docs" / "everyday"
    efr = (everyday / "everyday.fr").read_text(encoding="utf-8").splitlines()
    een = (everyday / "everyday.en").read_text(encoding="utf-8").splitlines()
    return {
        "tatoeba": [(f, "fr") for f, _ in tatoeba] + [(e, "en") for _, e in tatoeba],
        "tatoeba ≤ 20 chars": [(f, "fr") for f, _ in short] + [(e, "en") for _, e in short],
        "newstest2013": [(fr[i], "fr") for i in picked] + [(en[i], "en") for i in picked],
        "everyday": [(t, "fr") for t in efr if t.strip()] + [(t, "en") for t in een if t.strip()],
    }


def _libraries() -> dict[str, Callable[[str], str]]:
    """name → a function giving the language code of a text."""
    found: dict[str, Callable[[str], str]] = {}
    try:
        from lingua import Language, LanguageDetectorBuilder

        every = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models().build()
        two = LanguageDetectorBuilder.from_languages(Language.FRENCH, Language.ENGLISH).build()
        lo = LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()

        def code(detector):
            def run(text):
                found = detector.detect_language_of(text)
                return found.iso_code_639_1.name.lower() if found else "?"

            return run

        found["lingua 2 open (75 languages)"] = code(every)
        found["lingua 2 open, low-accuracy mode"] = code(lo)
        found["lingua 2 fr/en"] = code(two)
    except ImportError:
        print("lingua-language-detector not installed: skipped")
    try:
        from core.text.language import identify

        found["tt: core.text.language.identify"] = lambda t: identify(t, ("fr", "en"))[0].language
    except ImportError as exc:
        print(f"core.text.language: {exc}: skipped")
    try:
        import py3langid
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        restricted = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        restricted.set_languages(["fr", "en"])
        found["py3langid open (97 languages)"] = lambda t: py3langid.classify(t)[0]
        found["py3langid fr/en"] = lambda t: restricted.classify(t)[0]
    except ImportError:
        print("py3langid not installed: skipped")
    try:
        import langid

        found["langid 1.1 open"] = lambda t: langid.classify(t)[0]
    except ImportError:
        print("langid not installed: skipped")
    try:
        from langdetect import DetectorFactory, LangDetectException, detect

        DetectorFactory.seed = 0  # langdetect samples: without a seed its answers change between runs

        def langdetect(text: str) -> str:
            try:
                return detect(text)
            except LangDetectException:
                return "?"

        found["langdetect 1.0 open (seeded)"] = langdetect
    except ImportError:
        print("langdetect not installed: skipped")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="sentences of each language per set")
    args = parser.parse_args()
    sets = _sets(args.n)
    sizes = ", ".join(f"{name} {len(items)}" for name, items in sets.items())
    print(f"sentences: {sizes}; median length (chars): ", end="")
    print(", ".join(f"{name} {sorted(len(t) for t, _ in items)[len(items) // 2]}" for name, items in sets.items()))
    print()
    print("| library | " + " | ".join(sets) + " | µs per sentence |")
    print("|---|" + "---:|" * (len(sets) + 1))
    for name, run in _libraries().items():
        run("Bonjour tout le monde.")  # a lazy model loads on its first call: not timed
        cells, total_s, total_n = [], 0.0, 0
        for items in sets.values():
            started = time.perf_counter()
            answers = [run(text) for text, _ in items]
            total_s += time.perf_counter() - started
            total_n += len(items)
            right = sum(a == gold for a, (_, gold) in zip(answers, items))
            cells.append(f"{100 * right / len(items):.1f} %")
        print(f"| {name} | " + " | ".join(cells) + f" | {1e6 * total_s / total_n:.0f} |")


if __name__ == "__main__":
    main()
