"""Every option of `tt inspect`: what cannot go together is one line and exit 2 before any terminal
is needed; what it sets reaches the screen, checked on the real command in a pseudo-terminal."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from core.analysis.tracefile import save_trace
from core.decode.stepper import Stepper
from tests.tui.terminal import Terminal
from tests.tui.test_tui import SENTENCE
from tt_cli.main import app as cli

REFERENCE = "I am a student."


@pytest.fixture(scope="module")
def trace_path(tiny_loaded, tmp_path_factory):
    greedy = Stepper(tiny_loaded, SENTENCE)
    greedy.run()
    path = tmp_path_factory.mktemp("trace") / "je-suis.trace"
    return save_trace(path, greedy.source, greedy.steps, translation=greedy.output_text, model="tiny")


def usage_error(*args: str) -> str:
    """Run tt inspect ARGS without a terminal: it must stop with exit 2 and one line; that line."""
    result = CliRunner().invoke(cli, ["inspect", *args])
    assert result.exit_code == 2, (args, result.exit_code, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_options_that_cannot_go_together_are_usage_errors(trace_path, tiny_model_dir, tmp_path):
    trace, model = str(trace_path), str(tiny_model_dir)
    assert "--ref" in usage_error("--trace", trace, "--ref", REFERENCE)  # a real trace: nothing else stops it
    assert "--trace" in usage_error("--trace", trace, SENTENCE)
    assert "--trace" in usage_error("--trace", trace, "--model", model)
    for beam_option in (["--beam", "2"], ["--alpha", "0.3"]):
        assert "--beam and --alpha" in usage_error("--trace", trace, *beam_option)
        assert "--beam and --alpha" in usage_error("--run", str(tmp_path), *beam_option, SENTENCE)
    assert "--run" in usage_error("--run", str(tmp_path))  # no sentence
    for other in (["--trace", trace], ["--model", model], ["--ref", REFERENCE]):
        assert "--run" in usage_error("--run", str(tmp_path), *other, SENTENCE)


@pytest.mark.parametrize(
    "option", [["--top-k", "0"], ["--top-k", "51"], ["--beam", "0"], ["--beam", "17"], ["--alpha", "-0.1"]]
)
def test_out_of_range_values_are_usage_errors(option):
    """Typer's range check (how click's usage errors are drawn is the CLI's, not this command's)."""
    result = CliRunner().invoke(cli, ["inspect", *option, SENTENCE])
    assert result.exit_code == 2 and option[0] in result.stderr and result.stdout == ""


def test_bad_values_are_one_line_before_the_terminal_check(tiny_model_dir, tmp_path):
    runner = CliRunner()
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args, says in (
        (["--svg-dir", str(afile), SENTENCE], "not a directory (--svg-dir)"),
        (["--svg-dir", str(tmp_path / "missing"), SENTENCE], "not a directory (--svg-dir)"),
        (["--ref", "  ", SENTENCE], "the reference is empty"),
        (["--model", str(afile), SENTENCE], str(afile)),
        (["--run", str(tmp_path / "nope"), SENTENCE], "no such run directory"),
    ):
        result = runner.invoke(cli, ["inspect", *args])
        assert result.exit_code == 1 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_each_option_reaches_the_screen_of_the_real_command(tiny_model_dir, tmp_path):
    """TEXT, --model, --ref, --top-k, --beam, --alpha and --svg-dir, read off the saved screenshots
    (the working directory is elsewhere, so a screenshot there instead fails the test)."""
    shots, cwd = tmp_path / "shots", tmp_path / "cwd"
    shots.mkdir(), cwd.mkdir()
    args = ["--model", str(tiny_model_dir), "--ref", REFERENCE, "--top-k", "3", "--beam", "2", "--alpha", "0.3"]
    tt = Terminal([*args, "--svg-dir", str(shots), SENTENCE], shots, cwd)
    try:
        screen = tt.screen_until(lambda s: "first divergence" in s or "at every step" in s, "the reference table")
        assert f"“{REFERENCE}”" in screen, screen
        assert f"· {tiny_model_dir.name} ·" in screen and "source" in screen, screen
        tt.press("c")  # back to the distribution
        tt.screen_until(lambda s: "next piece · top-3 ·" in s, "three candidates")
        tt.press("b")
        tt.screen_until(lambda s: "beam search · beam 2 · α 0.3" in s and "kept" in s, "beam 2, α 0.3")
    finally:
        assert tt.quit() == 0, tt.tail()
    assert not list(cwd.iterdir())


@pytest.mark.slow
def test_trace_replays_in_the_real_command(trace_path, tmp_path):
    shots = tmp_path / "shots"
    shots.mkdir()
    tt = Terminal(["--trace", str(trace_path), "--top-k", "2", "--svg-dir", str(shots)], shots, tmp_path)
    try:
        screen = tt.screen_until(lambda s: "next piece · top-2 ·" in s, "a replay with two candidates")
        assert f"trace {trace_path.name}" in screen and "replay, no model" in screen
    finally:
        assert tt.quit() == 0, tt.tail()
