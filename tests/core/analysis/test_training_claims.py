"""core.analysis.training: label smoothing and warm-up read from three controlled runs' records.

The runs themselves take CPU-minutes (scripts/controlled_runs.py; docs/claims.md has the figures), so these
tests write the records the trainer writes — one `valid` event per validation in metrics.jsonl, and the
script's results.json — with chosen numbers, and check each verdict and where each figure comes from.
"""

from __future__ import annotations

import json

import pytest

from core.analysis.training import controlled_claims
from core.analysis.verdict import DEPENDS, FAILS, HOLDS
from core.errors import TTError


def write_runs(directory, loss, bleu, results=None):
    for name in ("baseline", "no-smoothing", "no-warmup"):
        run = directory / name
        run.mkdir(parents=True)
        records = [
            {"event": "start", "step": 0},
            {"event": "valid", "step": 500, "valid_loss": 9.0, "bleu": 0.0},  # an earlier validation: not read
            {"event": "step", "step": 1000, "loss": 1.0},
            {"event": "valid", "step": 1000, "valid_loss": loss[name], "bleu": bleu[name]},
        ]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    if results is not None:
        (directory / "results.json").write_text(json.dumps(results), encoding="utf-8")


# The shape of the runs in docs/claims.md: smoothing costs loss, no warm-up wrecks the run.
LOSS = {"baseline": 2.06, "no-smoothing": 2.01, "no-warmup": 5.53}
BLEU = {"baseline": 36.3, "no-smoothing": 30.1, "no-warmup": 0.0}


def by_key(directory):
    return {c.key: c for c in controlled_claims(directory)}


def test_the_paper_s_pattern_holds_and_the_figures_name_their_source(tmp_path):
    write_runs(tmp_path, LOSS, BLEU)
    claims = by_key(tmp_path)
    assert claims["label_smoothing"].verdict == HOLDS and claims["warmup"].verdict == HOLDS
    assert "2.060 vs 2.010" in claims["label_smoothing"].figure and "36.3 vs 30.1" in claims["label_smoothing"].figure
    assert "validation BLEU" in claims["label_smoothing"].figure and "step 1000" in claims["warmup"].figure
    assert claims["warmup"].values["loss"] == {"baseline": 2.06, "no-warmup": 5.53}


def test_results_json_s_test_bleu_wins_over_the_validation_sample(tmp_path):
    results = {n: {"bleu": b} for n, b in (("baseline", 29.2), ("no-smoothing", 29.1), ("no-warmup", 0.0))}
    results["bleu_on"] = "test BLEU (beam 4)"
    write_runs(tmp_path, LOSS, BLEU, results=results)
    smoothing = by_key(tmp_path)["label_smoothing"]
    assert smoothing.verdict == DEPENDS  # the loss cost shows, a 0.1-point BLEU gain is noise
    assert "test BLEU (beam 4) 29.2 vs 29.1" in smoothing.figure and "not the BLEU gain" in smoothing.why


def test_no_effect_does_not_hold(tmp_path):
    write_runs(
        tmp_path,
        loss={"baseline": 2.0, "no-smoothing": 2.1, "no-warmup": 2.02},
        bleu={"baseline": 30.0, "no-smoothing": 30.2, "no-warmup": 30.1},
    )
    claims = by_key(tmp_path)
    assert claims["label_smoothing"].verdict == FAILS and claims["warmup"].verdict == FAILS


def test_missing_or_broken_runs_are_one_line_errors(tmp_path):
    with pytest.raises(TTError, match=r"baseline/metrics.jsonl: missing .*controlled_runs.py"):
        controlled_claims(tmp_path)
    write_runs(
        tmp_path,
        loss=dict.fromkeys(("baseline", "no-smoothing", "no-warmup"), 2.0),
        bleu={}.fromkeys(("baseline", "no-smoothing", "no-warmup"), 1.0),
    )
    (tmp_path / "no-warmup" / "metrics.jsonl").write_text('{"event": "start"}\n{not json\n', encoding="utf-8")
    with pytest.raises(TTError, match=r"no-warmup/metrics.jsonl:2: not a JSON record"):
        controlled_claims(tmp_path)
    (tmp_path / "no-warmup" / "metrics.jsonl").write_text('{"event": "start"}\n', encoding="utf-8")
    with pytest.raises(TTError, match="no validation record yet"):
        controlled_claims(tmp_path)
