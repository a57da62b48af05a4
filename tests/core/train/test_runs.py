"""core.train.runs: a run's curve read back from its metrics.jsonl records (no training here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import DataError
from core.train.runs import Run, find_runs, panels, read_run

CPU = "Some CPU, 2 cores, PyTorch kernels AVX2"


def records(device: str = "cpu", world: int = 1) -> list[dict]:
    """A short run: a start, steps 1 and 10, validations at 10 (best) and 20 (not best), an end."""
    return [
        {"event": "start", "step": 0, "device": device, "world": world, "cpu": CPU},
        {"event": "step", "step": 1, "loss": 5.0, "lr": 1e-4, "grad_norm": 2.0, "elapsed": 36.0, "cpu_time": 72.0},
        {"event": "step", "step": 10, "loss": 4.0, "lr": 1e-3, "grad_norm": 1.0, "elapsed": 360.0, "cpu_time": 720.0},
        {
            "event": "valid",
            "step": 10,
            "best": True,
            "valid_loss": 4.5,
            "bleu": 3.0,
            "sets": {"data/news/newstest2013": {"valid_loss": 4.6, "bleu": 2.0}, "tatoeba": {"valid_loss": 4.4}},
            "elapsed": 720.0,
            "cpu_time": 1440.0,
        },
        {
            "event": "valid",
            "step": 20,
            "best": False,
            "valid_loss": 4.4,
            "bleu": 2.5,
            "elapsed": 1800.0,
            "cpu_time": 3600.0,
        },
        {"event": "end", "step": 20, "status": "finished", "elapsed": 1800.0},
    ]


def write_run(path: Path, recs: list[dict], tail: str = "") -> Path:
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs) + tail, encoding="utf-8")
    return path


def test_a_run_knows_its_last_and_best_validation_its_hours_and_machine(tmp_path):
    run = read_run(write_run(tmp_path / "pA", records()))
    assert run.name == "pA" and run.status == "finished" and run.machines == [CPU]
    assert [p.step for p in run.train] == [1, 10] and [p.step for p in run.valid] == [10, 20]
    assert run.last_valid.step == 20 and run.best.step == 10  # the best is the model, not the last
    assert run.hours_unit == "CPU" and run.last.hours == pytest.approx(1.0) and run.last.wall_hours == 0.5
    assert run.train[0].numbers["grad_norm"] == 2.0
    summary = run.to_dict()
    assert summary["best"]["step"] == 10 and summary["last_valid"]["bleu"] == 2.5 and "train" not in summary
    assert [p["step"] for p in run.to_dict(curve=True)["train"]] == [1, 10]


def test_gpu_hours_are_wall_time_times_processes_over_resumed_starts():
    run = Run("g")
    for r in records("cuda:0", world=4)[:3]:  # 360 s of wall time on 4 GPUs
        run.add(r)
    assert run.processes == 4
    run.add({"event": "start", "step": 10, "device": "cuda:0", "world": 2, "cpu": CPU, "resumed": True})
    assert run.processes == 2  # the last start's, as a model card names the command
    run.add({"event": "step", "step": 11, "loss": 3.0, "elapsed": 720.0})  # 360 s more on 2 GPUs
    assert run.hours_unit == "GPU" and run.machines == [f"4 × CUDA GPU, {CPU}", f"2 × CUDA GPU, {CPU}"]
    assert run.train[-1].hours == pytest.approx((360 * 4 + 360 * 2) / 3600)
    assert run.train[-1].wall_hours == pytest.approx(0.2)


def test_panels_draw_each_held_out_set_and_name_the_runs_when_there_are_several(tmp_path):
    run = read_run(write_run(tmp_path / "pA", records()))
    loss, bleu = panels([run], "step")
    assert [s.label for s in loss.series] == ["train", "newstest2013", "tatoeba"] and loss.falls
    assert [s.label for s in bleu.series] == ["newstest2013"]  # tatoeba has no BLEU
    assert loss.series[0].x == [1.0, 10.0] and loss.series[0].y == [5.0, 4.0]
    other = read_run(write_run(tmp_path / "pB", records()[:3] + records()[4:]))  # no held-out sets
    loss, bleu = panels([run, other], "hours")
    assert "pB train" in [s.label for s in loss.series] and "pA newstest2013" in [s.label for s in bleu.series]
    assert [s.label for s in bleu.series if s.label.startswith("pB")] == ["pB valid"]
    assert bleu.series[-1].x == [1.0] and bleu.series[-1].y == [2.5]  # CPU-hours on the x axis
    assert panels([other], "wall")[1].series[0].x == [0.5]


def test_two_runs_of_the_same_name_are_told_apart(tmp_path):
    a = read_run(write_run(tmp_path / "a" / "run", records()))
    b = read_run(write_run(tmp_path / "b" / "run", records()))
    labels = [s.label for s in panels([a, b], "step")[0].series]
    assert len(set(labels)) == len(labels)


def test_a_directory_of_runs_and_what_is_not_a_run(tmp_path):
    write_run(tmp_path / "runs" / "b", records())
    write_run(tmp_path / "runs" / "a", records(), tail='{"event": "step", "st')  # killed mid-line: read up to it
    (tmp_path / "runs" / "notes").mkdir()
    assert [r.name for r in find_runs(tmp_path / "runs")] == ["a", "b"]
    assert [r.name for r in find_runs(tmp_path / "runs" / "a")] == ["a"]  # a run directory itself
    with pytest.raises(DataError, match="no metrics.jsonl"):
        read_run(tmp_path / "runs" / "notes")
    with pytest.raises(DataError, match="no such directory"):
        find_runs(tmp_path / "missing")
    write_run(tmp_path / "bad", [], tail="not json\n{}\n")
    with pytest.raises(DataError, match="metrics.jsonl:1: not a JSON record"):
        read_run(tmp_path / "bad")
