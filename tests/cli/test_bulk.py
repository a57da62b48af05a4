"""Bulk translation under torchrun (`--raw`: the model alone on each line): two real gloo processes on this CPU write, byte for byte, what
one process writes; a failure on the way leaves no output file; options a split run cannot honour
are refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, TINY_TSV

pytestmark = pytest.mark.slow


def french(n: int) -> list[str]:
    lines = [row.split("\t")[0] for row in TINY_TSV.read_text(encoding="utf-8").splitlines()]
    return [lines[i % len(lines)] for i in range(n)]


def tt(*args: str, procs: int = 1) -> subprocess.CompletedProcess:
    """`tt ARGS` in one process, or under torchrun with `procs` processes (on this machine)."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}"]
    command = [*(launcher if procs > 1 else [sys.executable]), "-m", "tt_cli.main", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("tt: ")]


@pytest.mark.parametrize("form", [["--json"], ["--n-best", "2"]], ids=["json", "n-best"])
def test_two_processes_write_what_one_writes(tiny_model_dir, tmp_path, form):
    # Batch 2: chunks of 8 lines, 2 per process per round: 45 lines are 6 chunks, two rounds, the
    # second uneven. Blank lines and a line past the model's 64 positions (a warning) among them.
    lines = french(45)
    lines[3], lines[17], lines[30] = "", "   ", " ".join(french(40))
    source = tmp_path / "in.fr"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = ["translate", "--raw", "--model", str(tiny_model_dir), "--threads", "1", "--batch-size", "2", *form]
    one = tt(*common, "-i", str(source), "-o", str(tmp_path / "one.en"))
    two = tt(*common, "-i", str(source), "-o", str(tmp_path / "two.en"), procs=2)
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert (tmp_path / "two.en").read_bytes() == (tmp_path / "one.en").read_bytes()
    assert warnings(two.stderr) == warnings(one.stderr) and "line 31: " in one.stderr


def test_a_failure_stops_every_process_and_leaves_no_output(tiny_model_dir, tmp_path):
    source = tmp_path / "in.fr"
    source.write_bytes("\n".join(french(30)).encode() + b"\nLe \xff chat.\n")  # line 31: chunk 4, round 2
    out = tmp_path / "out.en"
    done = tt(
        "translate",
        "--raw",
        "--model",
        str(tiny_model_dir),
        "--batch-size",
        "2",
        "-i",
        str(source),
        "-o",
        str(out),
        procs=2,
    )
    assert done.returncode != 0
    assert f"tt: error: {source}:31: invalid UTF-8 (byte 0xff at column 4)" in done.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [source]


@pytest.mark.parametrize(
    "options, message",
    [
        ([], "under torchrun, tt translate shares out lines with --raw (the text pipeline runs in one process)"),
        (["--sample", "--seed", "1"], "--sample --seed draws per batch of the whole run: run it in one process"),
        (["--quantize", "int8"], "--precision: not available under torchrun (run it in one process)"),
    ],
)
def test_what_a_split_run_cannot_do_is_refused(tiny_model_dir, options, message):
    raw = ["--raw"] if options else []  # without it, the text pipeline, which a split run refuses
    done = tt("translate", *raw, "--model", str(tiny_model_dir), *options, "Bonjour.", procs=2)
    assert done.returncode != 0 and f"tt: error: {message}" in done.stderr
