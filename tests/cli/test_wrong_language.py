"""`tt translate` given English with the French→English model says so on stderr (core.text.language),
and keeps one output line per input line; French gets no such warning."""

from __future__ import annotations

from typer.testing import CliRunner

from tt_cli.main import app


def test_english_input_is_warned_of_and_french_is_not():
    english = "Hello, how are you doing today?"
    result = CliRunner().invoke(app, ["translate", "Je suis étudiant.", english], env={"TT_SERVER": ""})
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 2
    assert "tt: warning: line 2: this reads as English, not French" in result.stderr
    assert "line 1:" not in result.stderr  # the control: the French line is not warned of
