"""`tt learn` through the real Typer app: --list, --plain, --step, --model, errors, and the TUI in a pty."""

from __future__ import annotations

import os
import re

from typer.testing import CliRunner

from core.learn.lesson import live_numbers
from core.learn.steps import STEPS, render_plain, step
from tests.cli.test_repl import Terminal
from tests.conftest import ROOT
from tt_cli.main import app


def invoke(*args: str):
    return CliRunner().invoke(app, ["learn", *args])


def test_list_names_every_step_in_order_without_a_model(tmp_path):
    result = invoke("--list", "--model", str(tmp_path / "no-such-model"))  # --list loads no model
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == len(STEPS)
    for number, (line, s) in enumerate(zip(lines, STEPS), 1):
        assert line.split(None, 2) == [str(number), s.key, s.title]


def test_plain_prints_every_step_with_the_models_numbers(tiny_model_dir, tiny_loaded):
    result = invoke("--plain", "--model", str(tiny_model_dir))
    assert result.exit_code == 0, result.stderr
    # exactly the core's rendering of every step on the model given with --model (not the shipped one)
    assert result.stdout == "".join(render_plain(s, live_numbers(s, tiny_loaded)) + "\n" for s in STEPS)
    for number in range(1, len(STEPS) + 1):
        assert f"Step {number}/{len(STEPS)}: " in result.stdout


def test_plain_with_step_prints_that_step_only(tiny_model_dir, tiny_loaded):
    by_number = invoke("--plain", "--step", "7", "--model", str(tiny_model_dir))
    by_key = invoke("--plain", "-s", "scaling", "--model", str(tiny_model_dir))
    assert by_number.exit_code == 0 and by_number.stdout == by_key.stdout
    assert by_number.stdout == render_plain(step(7), live_numbers(step(7), tiny_loaded)) + "\n"


def test_plain_names_the_notes_slips_and_the_softmax_then_mask_sums(tiny_model_dir):
    cross = invoke("--plain", "--step", "cross_attention", "--model", str(tiny_model_dir)).stdout
    assert "Where a note is wrong — 003 (Decoder):" in cross
    assert "the queries come from the decoder" in cross and "keys and the values both come from the encoder" in cross
    masks = invoke("--plain", "--step", "masks", "--model", str(tiny_model_dir)).stdout
    assert "softmax first, then masked: rows sum to: [0.219, 0.431, 0.938, 0.750]" in masks


def test_sentence_puts_the_learners_own_sentence_into_the_steps_that_take_it(tiny_model_dir, tiny_loaded):
    from core.analysis.internals import source_walk

    own = invoke("--plain", "--step", "pieces", "--sentence", "Je suis étudiant.", "--model", str(tiny_model_dir))
    assert own.exit_code == 0, own.stderr
    assert "On the live model (Je suis étudiant.):" in own.stdout
    assert f"  pieces: {' '.join(source_walk(tiny_loaded, 'Je suis étudiant.').pieces)}\n" in own.stdout
    pair = "Je suis étudiant. | I am a student."
    bleu = invoke("--plain", "--step", "bleu", "--sentence", pair, "--model", str(tiny_model_dir)).stdout
    assert f"On the live model ({pair}):" in bleu and "  reference: I am a student.\n" in bleu
    # a step whose point needs its own sentences keeps them; a reference step keeps its pair without a reference
    kept = invoke("--plain", "--step", "coreference", "--sentence", "Je suis étudiant.", "-m", str(tiny_model_dir))
    assert f"On the live model ({step('coreference').sentence_line}):" in kept.stdout
    alone = invoke("--plain", "--step", "bleu", "--sentence", "Je suis étudiant.", "-m", str(tiny_model_dir))
    assert f"On the live model ({step('bleu').sentence_line}):" in alone.stdout
    empty = invoke("--plain", "--sentence", " | x", "--model", str(tiny_model_dir))
    assert empty.exit_code == 1 and empty.stderr.count("\n") == 1 and "--sentence" in empty.stderr


def test_bad_step_and_no_terminal_are_one_line_errors(tiny_model_dir):
    for bad, said in [("25", "steps 1 to 24"), ("nope", "no step 'nope'")]:
        result = invoke("--step", bad, "--plain", "--model", str(tiny_model_dir))
        assert result.exit_code == 1 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and said in result.stderr and "--step" in result.stderr
    result = invoke("--model", str(tiny_model_dir))  # CliRunner's stdin and stdout are no terminal
    assert result.exit_code == 1 and "needs a terminal; for text use tt learn --plain" in result.stderr


def test_the_lesson_in_a_real_terminal_starts_at_step_and_quits(tiny_model_dir, tmp_path):
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path)}
    tty = Terminal(["learn", "--step", "4", "--model", str(tiny_model_dir)], env)
    try:
        assert re.search(r"Step 4/24 · Self-attention by hand", tty.read_until(r"Step 4/24"))
        tty.read_until(r"q quit")
        tty.type("n")
        tty.read_until(r"Step 5/24 · A whole sentence")
        tty.type("i")  # into tt inspect on the step's view …
        tty.read_until(r"layer 1 of 2")
        tty.type("q")  # … and back to the same step
        tty.read_until(r"Step 5/24 · A whole sentence")
        tty.read_until(r"q quit")
        tty.type("q")
        assert tty.wait() == 0
    finally:
        tty.kill()
