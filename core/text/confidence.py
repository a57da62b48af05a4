"""How much to trust a translation, from what decoding already returns.

- sentence: exp of the mean log-probability of the output pieces (EOS's included when decoding stopped
  by itself) — the geometric mean of the piece probabilities, in (0, 1], comparable across lengths.
- coverage: how much of the source the output read. Each source piece's cross-attention mass, summed
  over the output steps and capped at 1, averaged over the source pieces (EOS left out). A translation
  that detaches from its source (a hallucination, a loop) parks its attention on EOS or a few pieces,
  and its coverage falls; one that reads every word has coverage near 1.
- words: per output word (pieces joined at "▁"), exp of the mean log-probability of its pieces.

docs/text.md reports how well each ranks bad translations (AUROC, scripts/confidence_auroc.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.text.entities import keep_source_entities


@dataclass(frozen=True)
class Confidence:
    sentence: float  # exp(mean piece log-probability), in (0, 1]
    coverage: float | None = None  # cross-attention coverage of the source in [0, 1]; None without attention
    words: list[tuple[str, float]] = field(default_factory=list)  # (output word, its confidence)

    def to_dict(self) -> dict:
        return {
            "confidence": round(self.sentence, 4),
            "coverage": None if self.coverage is None else round(self.coverage, 4),
            "word_confidences": [[w, round(c, 4)] for w, c in self.words],
        }


def sentence_confidence(token_logprobs: Sequence[float]) -> float:
    """exp(mean log-probability); 1.0 for an empty output (nothing to doubt)."""
    if not token_logprobs:
        return 1.0
    return math.exp(sum(token_logprobs) / len(token_logprobs))


def source_coverage(cross: Sequence[Sequence[float]], source_has_eos: bool = True) -> float:
    """Mean over source pieces of min(1, attention mass received); `cross` is (output steps, source pieces)."""
    if not cross:
        return 0.0
    n_src = len(cross[0]) - (1 if source_has_eos else 0)
    if n_src <= 0:
        return 1.0
    mass = [sum(row[j] for row in cross) for j in range(n_src)]
    return sum(min(1.0, m) for m in mass) / n_src


def word_confidences(
    pieces: Sequence[str], token_logprobs: Sequence[float], source: str = ""
) -> list[tuple[str, float]]:
    """(word, confidence) for each output word; a word is a piece starting with "▁" and those after it,
    written as the translation writes it (no HTML reference the source did not contain)."""
    words: list[tuple[str, list[float]]] = []
    for piece, lp in zip(pieces, token_logprobs):
        if piece.startswith("▁") or not words:
            words.append((piece.lstrip("▁"), [lp]))
        else:
            text, lps = words[-1]
            words[-1] = (text + piece, lps + [lp])
    return [(keep_source_entities(source, w), math.exp(sum(lps) / len(lps))) for w, lps in words if w]


def confidence(
    pieces: Sequence[str],
    token_logprobs: Sequence[float],
    cross: Sequence[Sequence[float]] | None = None,
    source: str = "",
) -> Confidence:
    """All three signals of one translation; `cross` (output steps × source pieces, EOS last) is optional."""
    return Confidence(
        sentence_confidence(token_logprobs),
        None if cross is None else source_coverage(cross),
        word_confidences(pieces, token_logprobs, source),
    )
