"""Corpus BLEU and chrF through sacreBLEU, so scores are comparable with published ones."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scores:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str


def corpus_scores(hypotheses: list[str], references: list[list[str]]) -> Scores:
    """references: one list per reference set, each aligned with `hypotheses`."""
    from sacrebleu.metrics import BLEU, CHRF

    for i, refs in enumerate(references):
        if len(refs) != len(hypotheses):
            raise ValueError(f"reference set {i + 1} has {len(refs)} lines, the hypotheses {len(hypotheses)}")
    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hypotheses, references)
    c = chrf.corpus_score(hypotheses, references)
    return Scores(round(b.score, 2), round(c.score, 2), str(bleu.get_signature()), str(chrf.get_signature()))
