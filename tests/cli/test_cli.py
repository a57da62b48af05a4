"""The root `tt` app: every command wired, options shared between commands, shell completion."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from tt_cli.main import app

runner = CliRunner()


def params(command: str) -> dict:
    """The click parameters of `tt COMMAND`, by name."""
    return {p.name: p for p in typer.main.get_command(app).commands[command].params}


def test_every_command_is_wired():
    assert set(typer.main.get_command(app).commands) == {
        "translate",
        "eval",
        "inspect",
        "learn",
        "train",
        "average",
        "align",
        "data",
        "analyze",
        "serve",
        "runs",
    }


def test_shared_options_are_one_definition():
    # That $TT_MODEL then picks the model of translate and eval: tests/core/test_api.py.
    helps = {name: params(name)["model"].help for name in ("translate", "eval", "inspect", "align")}
    assert set(helps.values()) == {"Model directory (default: $TT_MODEL, else the shipped model)."}
    for name in ("translate", "eval", "align", "train"):
        assert params(name)["threads"].help == params("translate")["threads"].help
        assert params(name)["device"].help == "auto, cpu, cuda, cuda:N or mps."
    assert params("train")["device"].rich_help_panel == "Training"  # grouped in train's --help only
    assert params("translate")["device"].rich_help_panel is None


@pytest.mark.parametrize(
    "shell, line", [("bash", "complete -o default -F _tt_completion tt"), ("zsh", "compdef _tt_completion tt")]
)
def test_show_completion_prints_the_shell_script(shell, line, monkeypatch):
    # Typer's own switch for naming the shell instead of detecting it from the parent process.
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    result = runner.invoke(app, ["--show-completion", shell])
    assert result.exit_code == 0, result.stderr
    assert line in result.stdout and "_TT_COMPLETE=complete_" in result.stdout


@pytest.mark.parametrize(
    "words, cword, expected",
    [
        ("tt tr", "1", {"translate", "train"}),
        ("tt train --prec", "2", {"--precision"}),
        ("tt data ", "2", {"get", "list"}),
    ],
)
def test_the_completion_script_gets_answers(words, cword, expected):
    """What the shell function asks tt when Tab is pressed (the bash protocol)."""
    result = runner.invoke(app, [], env={"_TT_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword})
    assert result.exit_code == 0, result.stderr
    assert set(result.stdout.split()) == expected


@pytest.mark.parametrize("command", [["inspect", "Je suis étudiant."], ["serve", "--port", "0"]])
@pytest.mark.parametrize(("option", "named"), [("--to", "?→de"), ("--from", "de→?")])
def test_inspect_and_serve_take_the_direction(command, option, named):
    """--from/--to choose the shipped model of a direction: a direction nobody shipped is one line and exit 1,
    before a terminal or a port is opened."""
    result = runner.invoke(app, [*command, option, "de"])
    assert result.exit_code == 1 and f"no {named} model is shipped" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "command",
    [
        ["align"],
        ["analyze", "ref", "I am a student.", "Je suis étudiant."],
        ["analyze", "heads", "I am a student.", "Je suis étudiant."],
    ],
)
def test_align_and_analyze_read_the_model_of_the_direction(command):
    """--from/--to pick the shipped model of that direction: the output equals --model weights/en-fr's and
    differs from the default fr→en model's."""
    from core.checkpoint import shipped_models

    pair = "I am a student .\tJe suis étudiant .\n" if command == ["align"] else None
    en_fr = str(shipped_models()[("en", "fr")])
    by_direction = runner.invoke(app, [*command, "--from", "en", "--json"], input=pair)
    by_model = runner.invoke(app, [*command, "--model", en_fr, "--json"], input=pair)
    default = runner.invoke(app, [*command, "--json"], input=pair)
    assert by_direction.exit_code == by_model.exit_code == default.exit_code == 0, by_direction.stderr
    assert by_direction.stdout == by_model.stdout != default.stdout
    wrong = runner.invoke(app, [*command, "--from", "de"], input=pair)
    assert wrong.exit_code == 1 and "no de→? model is shipped" in wrong.stderr
