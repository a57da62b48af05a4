"""Output paths of every command, from the outside: `-o -` and the special files in real processes
(stdout is then a real file descriptor), and a path that cannot be written as one line on stderr,
exit 1, nothing created, before any work. Nothing here needs root, and nothing passes only as root."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT, TINY_TSV
from tt_cli.main import app

runner = CliRunner()
SENTENCE = "Je suis étudiant."


def tt_process(*args: str, stdout=subprocess.PIPE, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tt_cli.main", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        check=False,
        timeout=300,
    )


@pytest.fixture(scope="module")
def expected(tiny_model_dir) -> str:
    result = runner.invoke(app, ["translate", "--model", str(tiny_model_dir), "--greedy", SENTENCE])
    assert result.exit_code == 0 and result.stdout.strip(), result.stderr
    return result.stdout


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_dash_and_dev_stdout_write_through_stdout(tiny_model_dir, expected, tmp_path):
    model = ["--model", str(tiny_model_dir), "--greedy"]
    dash = tt_process("translate", *model, "-o", "-", SENTENCE, cwd=tmp_path)
    assert dash.returncode == 0, dash.stderr
    assert dash.stdout.decode() == expected and list(tmp_path.iterdir()) == []  # no file named "-"
    # stdout appended to a file: /dev/stdout is that file, written at the end, never truncated or replaced.
    log = tmp_path / "log.txt"
    log.write_text("earlier\n")
    with open(log, "a") as appended:
        result = tt_process("translate", *model, "-o", "/dev/stdout", SENTENCE, stdout=appended)
    assert result.returncode == 0, result.stderr
    assert log.read_text() == "earlier\n" + expected
    assert os.path.islink("/dev/stdout") and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    null = tt_process("translate", *model, "-o", "/dev/null", SENTENCE)
    assert null.returncode == 0 and null.stdout == b"" and stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_eval_dash_keeps_translations_and_scores_in_order(tiny_model_dir, expected, tmp_path):
    (tmp_path / "a.fr").write_text(SENTENCE + "\n", encoding="utf-8")
    (tmp_path / "a.en").write_text("I am a student.\n", encoding="utf-8")
    args = ["--src", str(tmp_path / "a.fr"), "--ref", str(tmp_path / "a.en"), "--greedy", "--json"]
    result = tt_process("eval", "--model", str(tiny_model_dir), *args, "-o", "-")
    assert result.returncode == 0, result.stderr
    hypothesis, scores = result.stdout.decode().splitlines()
    assert hypothesis + "\n" == expected and "bleu" in json.loads(scores)


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_a_fifo_is_written_in_place(tiny_model_dir, expected, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    result = tt_process("translate", "--model", str(tiny_model_dir), "--greedy", "-o", str(fifo), SENTENCE)
    assert result.returncode == 0, result.stderr
    assert reader.communicate(timeout=60)[0].decode() == expected and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.fixture
def places(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("keep\n")
    (tmp_path / "readonly.txt").write_text("keep\n")
    (tmp_path / "readonly.txt").chmod(0o444)  # no write bit: refused even for root, who could write it
    return tmp_path


def snapshot(directory) -> dict:
    return {str(p.relative_to(directory)): p.stat().st_mtime_ns for p in sorted(directory.rglob("*"))}


def one_line_error(result, *words: str) -> None:
    assert result.exit_code == 1, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("tt: error: "), result.stderr
    assert all(w in result.stderr for w in words), result.stderr
    assert result.stdout == ""  # failed before any work: nothing was translated, trained or written


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("adir", ["adir: is a directory"]),
        ("missing/out.txt", ["no such directory", "missing"]),
        ("afile/out.txt", ["afile is not a directory"]),
        ("readonly.txt", ["readonly.txt: read-only"]),
    ],
)
@pytest.mark.parametrize("option", ["translate -o", "translate --trace", "eval -o"])
def test_an_output_that_cannot_be_written_is_one_line(tiny_model_dir, places, option, target, words):
    command, flag = option.split()
    (places / "a.fr").write_text(SENTENCE + "\n", encoding="utf-8")
    (places / "a.en").write_text("I am a student.\n", encoding="utf-8")
    args = {
        "translate": ["--greedy", SENTENCE],
        "eval": ["--src", str(places / "a.fr"), "--ref", str(places / "a.en")],
    }[command]
    before = snapshot(places)
    result = runner.invoke(app, [command, "--model", str(tiny_model_dir), flag, str(places / target), *args])
    one_line_error(result, *words)
    assert snapshot(places) == before


def test_train_out_on_a_file_is_one_line(places):
    before = snapshot(places)
    args = ["--data", str(TINY_TSV), "--preset", "tiny", "--max-steps", "1", "--valid-every", "0"]
    for out in ("afile", "afile/run"):
        result = runner.invoke(app, ["train", "--out", str(places / out), *args])
        one_line_error(result, "afile")
    assert snapshot(places) == before


def test_find_heads_never_writes_into_the_shipped_model_unless_told(places, monkeypatch):
    from weights import DIR

    monkeypatch.delenv("TT_MODEL", raising=False)
    (places / "a.fr").write_text("Je suis étudiant .\nIl est médecin .\n", encoding="utf-8")
    (places / "a.en").write_text("I am a student .\nHe is a doctor .\n", encoding="utf-8")
    (places / "a.wa").write_text("1 1 1\n1 2 2\n1 4 3\n2 1 1\n2 2 2\n2 4 3\n", encoding="utf-8")
    args = ["align", "--find-heads", "--src", str(places / "a.fr"), "--tgt", str(places / "a.en")]
    args += ["--gold", str(places / "a.wa")]
    shipped = {p.name: p.read_bytes() for p in DIR.iterdir() if p.is_file()}
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert "not stored" in result.stderr and "--save-to" in result.stderr and result.stdout.count("AER") > 10
    copy = places / "model"
    shutil.copytree(DIR, copy, ignore=shutil.ignore_patterns("alignment.json", "__*"))
    told = runner.invoke(app, [*args, "--save-to", str(copy)])
    assert told.exit_code == 0, told.stderr
    assert json.loads((copy / "alignment.json").read_text())["found_on"]["pairs"] == 2
    assert {p.name: p.read_bytes() for p in DIR.iterdir() if p.is_file()} == shipped
    # Checked before the ranking: a --save-to that cannot be written costs nothing.
    one_line_error(runner.invoke(app, [*args, "--save-to", str(places / "missing")]), "no such directory")
    result = runner.invoke(app, ["align", "--save-to", str(copy), *args[2:6]])  # without --find-heads
    assert result.exit_code == 2 and "--save-to" in result.stderr


@pytest.mark.slow  # subprocesses that import torch and load a model
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("how", ["-o", ">", "--json >", "md -o"])
def test_a_full_disk_is_one_line_and_exit_1(tiny_model_dir, tmp_path, how):
    """`-o /dev/full` and `> /dev/full`: one line naming the file, no traceback, exit 1."""
    model = ["--model", str(tiny_model_dir), "--greedy", "--local"]
    if how == "md -o":
        doc = tmp_path / "doc.md"
        doc.write_text("# Titre\n\nJe suis étudiant.\n", encoding="utf-8")
        result = tt_process("translate", *model, "-i", str(doc), "-o", "/dev/full")
    elif how == "-o":
        result = tt_process("translate", *model, SENTENCE, "-o", "/dev/full")
    else:
        with open("/dev/full", "w") as full:
            extra = ["--json"] if how.startswith("--json") else []
            result = tt_process("translate", *model, *extra, SENTENCE, stdout=full)
    assert result.returncode == 1
    assert result.stderr.decode() == "tt: error: /dev/full: no space left on device\n"
