"""The dev sets the text measurements use (scripts/text_bleu.py, scripts/confidence_auroc.py):
newstest2013 (first N lines) and the shipped model's Tatoeba test split, read from ../shared/data."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _lines(path: Path, n: int | None) -> list[str]:
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:n] if n else lines


def dev_sets(
    news_lines: int = 500, tatoeba_lines: int | None = None, news_set: str = "newstest2013"
) -> dict[str, tuple[list[str], list[str]]]:
    """name → (French sources, English references); tatoeba_lines keeps the split's first lines (0: none);
    news_set: which set of ../shared/data/news (newstest2012, flores101-dev, …), its first news_lines lines."""
    from core.data.readers import heldout_range, read_corpus

    card = json.loads((ROOT / "weights" / "card.json").read_text(encoding="utf-8"))["test_sets"]["tatoeba-test"]
    pairs = heldout_range(read_corpus(DATA / card["file"]), *card["buckets"])[:tatoeba_lines]
    news = DATA / "news" / news_set
    sets = {
        f"{news_set} (first {news_lines})": (
            _lines(news.with_suffix(".fr"), news_lines),
            _lines(news.with_suffix(".en"), news_lines),
        ),
        f"tatoeba-test ({len(pairs)} pairs)": ([p.src for p in pairs], [p.tgt for p in pairs]),
    }
    return {name: s for name, s in sets.items() if s[0]}
