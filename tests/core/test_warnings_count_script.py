"""scripts/warnings_count.py end to end on the shipped model: each option changes what is counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(path: Path, *args: str) -> str:
    cmd = [sys.executable, str(ROOT / "scripts" / "warnings_count.py"), str(path), *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout


def test_the_warnings_are_printed_and_counted(tmp_path):
    src = tmp_path / "set.fr"
    src.write_text("Je suis étudiant.\nAppeler Éric à 18h.\n", encoding="utf-8")
    out = _run(src, "--starts", "the name")
    assert "line 2: the name 'Éric' is not in the translation" in out and out.endswith(
        "1 warnings over 2 lines (" + str(src) + ")\n"
    )
    assert _run(src, "--lines", "1").startswith("0 warnings over 1 lines")  # --lines: the name's line left out
    assert _run(src, "--starts", "the number").startswith("0 warnings over 2 lines")  # --starts filters
    missing = subprocess.run(  # --model: the directory given is the one loaded
        [sys.executable, str(ROOT / "scripts" / "warnings_count.py"), str(src), "--model", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert missing.returncode != 0 and "none" in missing.stderr
