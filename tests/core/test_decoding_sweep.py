"""scripts/decoding_sweep.py: one row per (beam, α) pair, greedy once, scored on the first --lines lines."""

from __future__ import annotations

import subprocess
import sys

from core.data.readers import read_corpus
from tests.conftest import ROOT, TINY_TSV


def sweep(model, prefix, *options: str) -> list[str]:
    cmd = [sys.executable, str(ROOT / "scripts/decoding_sweep.py"), "--model", str(model), "--dev", str(prefix)]
    result = subprocess.run([*cmd, "--threads", "1", *options], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_sweep_scores_every_pair_on_the_first_lines(tiny_model_dir, tmp_path):
    pairs = list(read_corpus(TINY_TSV))[:12]
    (tmp_path / "dev.fr").write_text("".join(p.src + "\n" for p in pairs), encoding="utf-8")
    (tmp_path / "dev.en").write_text("".join(p.tgt + "\n" for p in pairs), encoding="utf-8")
    out = sweep(tiny_model_dir, tmp_path / "dev", "--lines", "5", "--beams", "1,2", "--alphas", "0.5,1.0")
    assert out[0].startswith("dev: 5 sentences (the first 5 lines)")
    rows = [line.split(" | ") for line in out if line.startswith("| ") and line[2].isdigit()]
    assert sorted((r[0].strip("| "), r[1]) for r in rows) == [("1", "–"), ("2", "0.5"), ("2", "1.0")]
    bleus = [float(r[2]) for r in rows]
    assert bleus == sorted(bleus, reverse=True)  # best first
    everything = sweep(tiny_model_dir, tmp_path / "dev", "--lines", "0", "--beams", "1")
    assert everything[0].startswith("dev: 12 sentences (all lines)")
