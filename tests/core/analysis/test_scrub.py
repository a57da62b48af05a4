"""The checkpoint scrubber over a real (tiny) training run with two saved checkpoints."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from core.analysis.scrub import run_checkpoints, scrub
from core.checkpoint import load_model
from core.decode.translate import TranslateOptions, translate_lines
from core.errors import CheckpointError
from tt_cli.main import app

PROBE = "Je suis étudiant."


@pytest.fixture(scope="module")
def run_dir(tiny_run_dir):
    return tiny_run_dir  # the session's tiny run: checkpoints at 100, 200 and 300


def test_one_point_per_checkpoint_oldest_first(run_dir):
    points = list(scrub(run_dir, PROBE, top_k=3))
    assert [p.step for p in points] == [100, 200, 300]
    for p in points:
        loaded = load_model(p.path)
        t = next(translate_lines(loaded, [PROBE], TranslateOptions(method="greedy")))
        assert p.translation == t.text  # the traced output is the greedy output of that checkpoint
        assert p.logprob == pytest.approx(sum(t.token_logprobs), abs=1e-4)
        assert all(len(s.candidates) == 3 for s in p.steps)
        assert p.cross().shape == (len(p.steps), len(p.source.tokens))
    assert points[1].logprob > points[0].logprob  # the probe is a training sentence: learned over time


def test_no_checkpoints_is_one_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="no finished checkpoints"):
        run_checkpoints(tmp_path)
    with pytest.raises(CheckpointError, match="no such run directory"):
        run_checkpoints(tmp_path / "absent")


def test_cli_run_json_and_table(run_dir, tmp_path):
    result = CliRunner().invoke(app, ["analyze", "run", "--run", str(run_dir), PROBE, "--json"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert [c["step"] for c in obj["checkpoints"]] == [100, 200, 300]
    last = obj["checkpoints"][-1]
    assert len(last["cross"]) == len(last["output_pieces"]) and len(last["cross"][0]) == len(last["source_pieces"])
    table = CliRunner().invoke(app, ["analyze", "run", "--run", str(run_dir), PROBE])
    assert table.exit_code == 0 and "200" in table.stdout
    empty = CliRunner().invoke(app, ["analyze", "run", "--run", str(tmp_path), PROBE])
    assert empty.exit_code == 1 and "no finished checkpoints" in empty.stderr
