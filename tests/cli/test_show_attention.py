"""`tt translate --show-attention` on a narrow terminal and without colour: the heatmap says how many
source columns it cut, and its cells carry their weights when there is no colour to read."""

from __future__ import annotations

import re

from rich.console import Console
from typer.testing import CliRunner

from tt_cli.main import app
from tt_cli.render import heatmap

LONG = "Le président de la commission européenne a annoncé hier une nouvelle politique pour les agriculteurs."


def test_at_80_columns_without_colour_the_cut_is_counted_and_cells_show_weights(tiny_model_dir):
    args = ["translate", "--model", str(tiny_model_dir), "--greedy", "--show-attention"]
    result = CliRunner().invoke(app, [*args, LONG], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("tt: ")]  # (a length warning)
    assert all(len(line) <= 80 for line in lines)
    cut = re.search(r"(\d+) of (\d+) source columns cut to fit 80 columns", result.stderr)
    assert cut is not None, result.stderr
    header = lines[lines.index(next(line for line in lines if "cross-attention" in line)) + 1]
    assert len(header.split()) == int(cut[2]) - int(cut[1])  # the columns shown are the ones not cut
    rows = [line for line in lines if re.search(r"\s\.\d\d(\s|$)", line)]
    assert rows and all(len(re.findall(r"(?:\.\d\d|1\.0)", row)) == len(header.split()) for row in rows)
    assert "the attention weight" in result.stderr  # the legend says what the numbers are
    short = CliRunner().invoke(app, [*args, "Le chat dort."], env={"COLUMNS": "80"})
    assert "cut" not in short.stderr


def test_with_colour_the_cells_are_coloured_and_the_cut_still_counted():
    weights = [[1 / 30] * 30 for _ in range(3)]
    console = Console(width=60, color_system="truecolor", record=True)
    console.print(heatmap(weights, [f"▁w{i}" for i in range(30)], ["▁a", "▁b", "</s>"], width=60))
    text = console.export_text()
    shown = len(next(line for line in text.splitlines() if "·w0" in line).split())
    assert f"{30 - shown} of 30 source columns cut to fit 60 columns" in text and 0 < shown < 30
    assert max(len(line) for line in text.splitlines()) <= 60
