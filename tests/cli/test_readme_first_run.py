"""The README's short first run: its `tt train` line is accepted as written and trains the preset it names.

The run itself takes minutes of CPU (the README gives its figures and how they were measured); here the same
command line trains two steps on the fixture corpus, so a renamed option, a lost preset or a setting that
breaks training fails here before a reader meets it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from core.checkpoint import load_model
from tests.conftest import TINY_TSV
from tt_cli.main import app

README = Path(__file__).resolve().parents[2] / "README.md"


def first_run_line() -> list[str]:
    block = README.read_text(encoding="utf-8").split("A short first run of your own", 1)[1].split("```", 2)[1]
    (line,) = [ln for ln in block.splitlines() if ln.startswith("tt train ")]
    return shlex.split(re.sub(r"\s+#.*$", "", line))[1:]


def test_the_readme_first_run_trains_as_written(tmp_path):
    args = first_run_line()
    settings = dict(zip(args[1::2], args[2::2])) if args[0] == "train" else {}
    assert settings["--preset"] == "mini" and "--max-time" in settings  # what the README's figures describe
    swap = {"--data": str(TINY_TSV), "--out": str(tmp_path / "first"), "--max-time": "0", "--vocab-size": "120"}
    runnable = [swap.get(prev, a) for prev, a in zip([""] + args, args)]
    result = CliRunner().invoke(app, [*runnable, "--max-steps", "2", "--spm-sample", "1000", "--quiet"])
    assert result.exit_code == 0, result.output
    cfg = load_model(tmp_path / "first").cfg
    assert (cfg.d_model, cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.d_ff, cfg.dropout) == (128, 3, 3, 512, 0.0)
