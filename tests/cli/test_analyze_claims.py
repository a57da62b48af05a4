"""`tt analyze claims` through the real Typer app on the tiny real model: every claim, each option."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from core.analysis.claims import VERDICTS, all_claims
from tests.conftest import FIXTURES
from tt_cli.main import app

TIMED = ["multihead_cost", "attention_quadratic"]
QUALITY = ["quality_by_length", "beam_beats_greedy"]


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    """The fixture corpus as --src/--ref files (the tiny model's own sentences: a toy held-out set)."""
    pairs = [line.split("\t") for line in (FIXTURES / "tiny.tsv").read_text(encoding="utf-8").splitlines()]
    folder = tmp_path_factory.mktemp("claims")
    (folder / "test.fr").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    (folder / "test.en").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
    return folder / "test.fr", folder / "test.en", [(s, t) for s, t in pairs]


@pytest.fixture(scope="module")
def model_claims(tiny_loaded) -> list[str]:
    """The claims read off the model alone, in core's order (tests/core/analysis/test_claims.py lists them)."""
    return [c.key for c in all_claims(tiny_loaded, [], timing=False)]


def invoke(*args: str):
    return CliRunner().invoke(app, ["analyze", "claims", *args])


def claims_of(result) -> dict[str, dict]:
    assert result.exit_code == 0, result.stderr
    return {c["key"]: c for c in json.loads(result.stdout)["claims"]}


def test_json_reports_every_claim_with_the_core_figures(tiny_model_dir, tiny_loaded, held_out, model_claims):
    src, ref, pairs = held_out
    result = invoke("--src", str(src), "--ref", str(ref), "--model", str(tiny_model_dir), "--json")
    found = claims_of(result)
    assert list(found) == model_claims + TIMED + QUALITY  # timing is on by default
    assert json.loads(result.stdout)["model"] == str(tiny_model_dir)
    for c in found.values():
        assert c["verdict"] in VERDICTS and c["figure"] and c["claim"] and c["source"] and c["why"]
    # the model's own figures, as core computes them on the model given with --model
    expected = {c.key: c for c in all_claims(tiny_loaded, pairs, set_name="test.fr", timing=False)}
    for key in model_claims + QUALITY:
        assert found[key]["figure"] == expected[key].figure, key
        assert found[key]["verdict"] == expected[key].verdict, key
    assert found["beam_beats_greedy"]["values"]["sentences"] == len(pairs)
    assert found["multihead_cost"]["values"]["cpu"]


def test_the_cost_verdicts_come_from_counted_work_the_same_on_two_runs(tiny_model_dir, tiny_loaded):
    runs = [claims_of(invoke("--json", "--model", str(tiny_model_dir))) for _ in range(2)]
    quad = [r["attention_quadratic"] for r in runs]
    assert quad[0]["verdict"] == quad[1]["verdict"] == "depends"  # quadratic core, linear layer at these N
    assert quad[0]["values"]["core_macs"] == quad[1]["values"]["core_macs"]
    assert quad[0]["figure"].startswith("counted for N = 64–1024: softmax(QKᵀ/√d_k)V multiply-adds ∝ N^2.00")
    assert "wall-clock beside, not deciding" in quad[0]["figure"]
    cfg = tiny_loaded.cfg
    assert quad[0]["values"]["core_macs"]["1024"] == 2 * cfg.h * 1024 * 1024 * cfg.d_k
    cost = [r["multihead_cost"] for r in runs]
    assert cost[0]["verdict"] == cost[1]["verdict"] == "does not hold" and cost[0]["values"]["ratio"] == 1.0


def test_limit_no_timing_and_no_held_out_set(tiny_model_dir, held_out, model_claims):
    src, ref, _ = held_out
    limited = claims_of(
        invoke("--src", str(src), "--ref", str(ref), "--limit", "7", "--no-timing", "--json", "-m", str(tiny_model_dir))
    )
    assert list(limited) == model_claims + QUALITY
    assert limited["beam_beats_greedy"]["values"]["sentences"] == 7
    assert sum(b["sentences"] for b in limited["quality_by_length"]["values"]["buckets"]) == 7
    alone = invoke("--no-timing", "--json", "--model", str(tiny_model_dir))
    assert list(claims_of(alone)) == model_claims
    assert "need a held-out set: give --src and --ref" in alone.stderr


def test_text_output_names_each_claim_and_its_verdict(tiny_model_dir, model_claims):
    result = invoke("--no-timing", "--model", str(tiny_model_dir))
    assert result.exit_code == 0, result.stderr
    for key in model_claims:
        assert key in result.stdout
    assert any(v.upper() in result.stdout for v in VERDICTS)
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.stdout)


def test_threads_and_device_are_used(tiny_model_dir):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert invoke("--no-timing", "--json", "--threads", "1", "-m", str(tiny_model_dir)).exit_code == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    bad = invoke("--no-timing", "--device", "tpu", "-m", str(tiny_model_dir))
    assert bad.exit_code != 0 and "tpu" in bad.stderr and bad.stdout == ""


def test_src_without_ref_is_a_usage_error(held_out):
    src, _, _ = held_out
    result = invoke("--src", str(src))
    assert result.exit_code == 2 and "--src and --ref go together" in result.stderr


def test_runs_adds_the_training_claims_and_a_bad_directory_is_one_line(tiny_model_dir, model_claims, tmp_path):
    from tests.core.analysis.test_training_claims import BLEU, LOSS, write_runs

    write_runs(tmp_path, LOSS, BLEU)
    found = claims_of(invoke("--runs", str(tmp_path), "--no-timing", "--json", "--model", str(tiny_model_dir)))
    assert list(found) == model_claims + ["label_smoothing", "warmup"]
    assert found["warmup"]["verdict"] == "holds" and "5.530" in found["warmup"]["figure"]
    missing = invoke("--runs", str(tmp_path / "none"), "--no-timing", "--model", str(tiny_model_dir))
    assert missing.exit_code == 1 and "baseline/metrics.jsonl: missing" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
