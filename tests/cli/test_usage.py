"""How the command line reads: flags take no value, usage errors are one line with exit 2, a sentence
with a leading dash gets the `--` hint. Through the real app, in a subprocess where the exact stderr
and exit code of the installed `tt` matter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from tests.conftest import ROOT
from tt_cli.main import app
from tt_cli.usage import TTCommand, TTGroup

runner = CliRunner()


def _commands(command, path=("tt",)):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_every_group_and_command_is_tts_own():
    for path, command in _commands(get_command(app)):
        kind = TTGroup if hasattr(command, "commands") else TTCommand
        assert isinstance(command, kind), " ".join(path)


@pytest.mark.parametrize("path", [p for p, _ in _commands(get_command(app))], ids=" ".join)
def test_help_shows_no_bool_beside_a_flag(path):
    result = runner.invoke(app, [*path[1:], "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout


def tt(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """The installed entry point as a user runs it (the error handler lives in main(), not in the app)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "tt_cli.main", *args], input=stdin, capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (
            ["translate", "--greedy", "true", "Le chat"],
            "tt: error: --greedy is a flag and takes no value: drop 'true' "
            "(a sentence that is only 'true' goes after --) (see tt translate -h)\n",
        ),
        (
            ["train", "--resume", "yes"],
            "tt: error: --resume is a flag and takes no value: drop 'yes' (see tt train -h)\n",
        ),
        (
            ["translate", "--bem", "3", "Le chat"],
            "tt: error: No such option: --bem (Possible options: --beam, --n-best) (see tt translate -h)\n",
        ),
        (
            ["translate", "--beam", "x", "Le chat"],
            "tt: error: Invalid value for '--beam': Input should be a valid integer, unable to parse string as "
            "an integer (see tt translate -h)\n",
        ),
        (
            ["translate", "- Oui, dit-il."],
            "tt: error: no such option: - Oui, dit-il.; a sentence that starts with a dash goes after --: "
            "tt translate -- '- Oui, dit-il.' (see tt translate -h)\n",
        ),
        (["nothing"], "tt: error: No such command 'nothing'. (see tt -h)\n"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, stderr):
    result = tt(*args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", stderr)


def test_a_sentence_after_double_dash_and_a_flag_before_it_translate():
    result = tt("translate", "--greedy", "--", "- Oui, dit-il.", "true")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2  # both are sentences once after --


def test_sampling_options_without_sample_are_an_error():
    result = runner.invoke(app, ["translate", "--top-k", "5", "--top-p", "0.9", "Le chat dort."])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == "tt: error: --top-k and --top-p shape sampling only: add --sample (or leave them out)\n"
    alone = runner.invoke(app, ["translate", "--temperature", "0.5", "Le chat dort."])
    assert alone.exit_code == 1 and "--temperature shape sampling only" in alone.stderr


def test_a_bad_model_path_from_tt_model_says_so(tmp_path):
    missing = tmp_path / "nope"
    from_env = runner.invoke(app, ["translate", "Le chat."], env={"TT_MODEL": str(missing)})
    assert from_env.exit_code == 1
    assert from_env.stderr == (
        f"tt: error: {missing}: no such model directory (the path is $TT_MODEL's; unset it for the shipped model)\n"
    )
    typed = runner.invoke(app, ["translate", "--model", str(missing), "Le chat."], env={"TT_MODEL": str(tmp_path)})
    assert typed.stderr == f"tt: error: {missing}: no such model directory\n"  # --model wins and is named alone


def test_a_model_given_as_a_file_says_it_is_a_file(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"")
    result = runner.invoke(app, ["translate", "--model", str(tmp_path / "model.safetensors"), "Le chat."])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"tt: error: {tmp_path / 'model.safetensors'}: not a directory (a model is a")
