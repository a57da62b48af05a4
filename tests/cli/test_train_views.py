"""What `tt train` shows besides its progress line: the live learning curve on a terminal (off with
--plain), and TensorBoard event files (--tensorboard), read back with TensorBoard's own reader."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.test_train import tiny_args
from tt_cli.main import app

runner = CliRunner()
TERMINAL = {"TTY_COMPATIBLE": "1", "COLUMNS": "100", "LINES": "40", "NO_COLOR": "1"}  # rich: stderr is a terminal
FRAME = re.compile(r"┤.*│")  # a plot's left axis, then its canvas


def train(out: Path, *extra: str, env: dict | None = None):
    args = tiny_args(out, "--max-steps", "20", "--valid-every", "10", "--bleu-sample", "4", "--log-every", "5", *extra)
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.stderr
    return result


def records(run: Path, kind: str) -> list[dict]:
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == kind]


def test_a_terminal_sees_the_curve_and_plain_turns_it_off(tmp_path):
    live = train(tmp_path / "live", env=TERMINAL).stderr
    assert FRAME.search(live) and re.search(r"loss · step 20 · [\d.e-]+ CPU-hours\s+BLEU", live), live[-3000:]
    assert "train" in live and "valid" in live  # the legend: training loss, validation loss and BLEU
    assert "step 5/20  loss" not in live  # the bar, not a line per logged step
    plain = train(tmp_path / "plain", "--plain", env=TERMINAL).stderr
    assert not FRAME.search(plain) and "BLEU " in plain
    assert [int(s) for s in re.findall(r"^step (\d+)/20  loss", plain, re.M)] == [1, 5, 10, 15, 20]


def test_no_terminal_no_curve(tmp_path):
    assert not FRAME.search(train(tmp_path / "r").stderr)


def test_tensorboard_event_file_holds_the_runs_numbers(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = tmp_path / "r"
    train(run, "--tensorboard")
    (events,) = (run / "tensorboard").glob("events.out.tfevents.*")
    board = EventAccumulator(str(events), size_guidance={"scalars": 0, "tensors": 0})
    board.Reload()
    steps, valid = records(run, "step"), records(run, "valid")
    for name in ("loss", "lr", "grad_norm", "tokens_per_s"):
        scalars = board.Scalars(f"train/{name}")
        assert [s.step for s in scalars] == [r["step"] for r in steps] == [1, 5, 10, 15, 20]
        assert [s.value for s in scalars] == pytest.approx([r[name] for r in steps], rel=1e-6)
    for name, key in (("loss", "valid_loss"), ("ppl", "valid_ppl"), ("bleu", "bleu"), ("chrf", "chrf")):
        scalars = board.Scalars(f"valid/{name}")
        assert [(s.step, pytest.approx(s.value, rel=1e-6)) for s in scalars] == [(r["step"], r[key]) for r in valid]
    config = board.Tensors("config/train/text_summary")[0].tensor_proto.string_val[0].decode("utf-8")
    assert '"tensorboard": true' in config and '"max_steps": 20' in config
    model = board.Tensors("config/model/text_summary")[0].tensor_proto.string_val[0].decode("utf-8")
    assert f'"d_model": {records(run, "start")[0]["model_config"]["d_model"]}' in model
    assert not (tmp_path / "no-board").exists()
    train(tmp_path / "no-board")
    assert not (tmp_path / "no-board" / "tensorboard").exists()


def test_tensorboard_each_held_out_set_and_resume_drops_what_the_resumed_start_wrote_past_its_checkpoint(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tests.conftest import TINY_TSV

    run = tmp_path / "r"
    two_sets = ("--valid", str(TINY_TSV), "--valid", str(TINY_TSV), "--save-every", "10")
    train(run, "--tensorboard", *two_sets)
    (run / "checkpoints" / "step_00000020").rename(run / "gone")  # as if killed after step 10's checkpoint
    resumed = runner.invoke(app, ["train", "--out", str(run), "--resume", "--max-steps", "20"])
    assert resumed.exit_code == 0, resumed.stderr
    board = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0})
    board.Reload()
    assert [s.step for s in board.Scalars("train/loss")] == [1, 5, 10, 15, 20]  # 15 and 20 once each
    set_names = list(records(run, "valid")[-1]["sets"])
    assert len(set_names) == 2
    for name in set_names:
        assert [s.step for s in board.Scalars(f"valid/{name.strip('/')}/loss")] == [10, 20]


def test_tensorboard_missing_is_one_line_before_any_work(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else find_spec(name, *a)
    )
    result = runner.invoke(app, tiny_args(tmp_path / "r", "--max-steps", "2", "--tensorboard"))
    assert result.exit_code == 1 and result.stderr.strip().splitlines() == [
        "tt: error: --tensorboard needs the tensorboard package: pip install 'tt[tensorboard]' (or pip install tensorboard)"
    ]
    assert not (tmp_path / "r").exists()
