"""`tt runs` and `tt runs show` on two tiny runs trained here (30 steps each, validated every 10)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tests.conftest import tiny_train_config
from tt_cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    """runs/slow and runs/fast: the same tiny model, the second with ten times the learning rate."""
    from core.train.trainer import Trainer

    root = tmp_path_factory.mktemp("runs")
    for name, scale in (("slow", 0.2), ("fast", 2.0)):
        cfg = tiny_train_config(
            root / name, max_steps=30, warmup=10, lr_scale=scale, valid_every=10, bleu_sample=4, log_every=5
        )
        Trainer(cfg).run()
    return root


def tt(*args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.stderr or result.output
    return result.stdout


def test_show_draws_both_runs_side_by_side(runs_dir):
    out = tt("runs", "show", runs_dir / "slow", runs_dir / "fast")
    lines = out.splitlines()
    assert re.search(r"loss\s+BLEU", lines[0]), lines[0]  # the two panels, side by side
    for label in ("slow train", "slow valid", "fast train", "fast valid"):
        assert out.count(label) == (2 if "valid" in label else 1), label  # valid: in the loss and BLEU legends
    # Without colour each series has a character of its own; all four are plotted on the canvas.
    legend = dict(re.findall(r"│ (\S) (slow train|slow valid|fast train|fast valid) │", out))
    assert set(legend.values()) == {"slow train", "slow valid", "fast train", "fast valid"}
    rows = [re.split(r"[┤│]", line, maxsplit=1)[-1] for line in lines[2:-3]]  # right of the left y axis
    canvas = re.sub(r"│ \S (slow|fast) (train|valid) │", "", "\n".join(rows))  # less the legend's samples
    for marker in legend:
        assert canvas.count(marker) > 3, (marker, legend[marker])
    assert lines[-1].strip().endswith("step")


def test_show_x_puts_cpu_hours_on_the_axis(runs_dir):
    by_step = tt("runs", "show", runs_dir / "slow", "--x", "step")
    by_hours = tt("runs", "show", runs_dir / "slow", "--x", "hours")
    assert by_step.splitlines()[-1].split() == ["step", "step"]
    assert by_hours.splitlines()[-1].split() == ["CPU/GPU", "hours", "CPU/GPU", "hours"]
    assert "30" in by_step.splitlines()[-2] and "30" not in by_hours.splitlines()[-2]  # a run of seconds
    assert tt("runs", "show", runs_dir / "slow", "--x", "wall").splitlines()[-1].split()[:2] == ["wall", "hours"]


def test_show_json_holds_every_point_of_both_curves(runs_dir):
    shown = json.loads(tt("runs", "show", runs_dir / "slow", runs_dir / "fast", "--json"))
    assert [r["name"] for r in shown] == ["slow", "fast"]
    for run in shown:
        records = [json.loads(x) for x in (runs_dir / run["name"] / "metrics.jsonl").read_text().splitlines()]
        assert [p["step"] for p in run["valid"]] == [10, 20, 30]
        assert [p["loss"] for p in run["train"]] == [r["loss"] for r in records if r["event"] == "step"]
        assert all(p["grad_norm"] > 0 for p in run["train"])


def test_show_table_is_the_markdown_of_every_validation(runs_dir):
    table = tt("runs", "show", runs_dir / "slow", runs_dir / "fast", "--table").splitlines()
    assert table[0].startswith("| run | step |")
    assert [row.split(" | ")[:2] for row in table[2:8]] == [["| slow", s] for s in ("10", "20", "30")] + [
        ["| fast", s] for s in ("10", "20", "30")
    ]
    assert table[-1].startswith("- fast: ") and "cores" in table[-1]


def test_show_png_writes_the_figure_with_both_runs(runs_dir, tmp_path, monkeypatch):
    import tt_cli.figures

    made = []
    save = tt_cli.figures.save
    monkeypatch.setattr(tt_cli.figures, "save", lambda fig, path, option="": made.append(fig) or save(fig, path))
    png = tmp_path / "curves.png"
    result = runner.invoke(app, ["runs", "show", str(runs_dir / "slow"), str(runs_dir / "fast"), "--png", str(png)])
    assert result.exit_code == 0 and result.stdout == "", result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (figure,) = made
    loss, bleu = figure.axes
    assert [line.get_label() for line in loss.lines] == ["slow train", "slow valid", "fast train", "fast valid"]
    assert [line.get_label() for line in bleu.lines] == ["slow valid", "fast valid"]
    assert loss.get_xlabel() == "step"


def test_list_shows_each_run_and_its_best_step(runs_dir):
    lines = tt("runs", runs_dir).splitlines()
    assert lines[0].split()[:3] == ["run", "step", "hours"]
    assert [line.split()[0] for line in lines[1:]] == ["fast", "slow"]
    for line in lines[1:]:
        assert " 30 " in line and "finished" in line and "cores" in line  # step, status, machine
    listed = json.loads(tt("runs", "list", runs_dir, "--json"))
    for run in listed:
        valid = [json.loads(x) for x in (runs_dir / run["name"] / "metrics.jsonl").read_text().splitlines()]
        valid = [r for r in valid if r["event"] == "valid"]
        best = max((r for r in valid if r["best"]), key=lambda r: r["step"])
        assert run["best"]["step"] == best["step"] and run["last_valid"]["step"] == 30
        assert run["best"]["step"] == int(lines[1 + [r["name"] for r in listed].index(run["name"])].split()[6])
        assert "train" not in run


def test_mistakes_are_one_line(runs_dir, tmp_path):
    for args, says in (
        (["runs", str(tmp_path)], "no runs here"),
        (["runs", "show", str(tmp_path)], "no metrics.jsonl"),
        (["runs", "show", str(runs_dir / "slow"), "--png", str(tmp_path / "x.gif")], "give a file name ending in"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 1 and says in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    both = runner.invoke(app, ["runs", "show", str(runs_dir / "slow"), "--json", "--table"])
    assert both.exit_code == 2 and "give one" in both.stderr
