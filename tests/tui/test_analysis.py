"""`tt inspect` analysis views through Textual's Pilot on the tiny real model: a replayed trace file,
heads switched off live, and the word-alignment view."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from core.analysis.tracefile import load_trace, save_trace
from core.decode.stepper import Stepper
from tests.tui.test_tui import SENTENCE, drive, keys, text_of
from tt_cli.main import app as cli
from tt_cli.tui.widgets.distribution import Distribution
from tt_cli.tui.widgets.heatmap import Heatmap
from tt_cli.tui.widgets.sentence import SentenceView


@pytest.fixture(scope="module")
def greedy(tiny_loaded):
    stepper = Stepper(tiny_loaded, SENTENCE)
    stepper.run()
    return stepper


@pytest.fixture(scope="module")
def trace_file(greedy, tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "je-suis.trace"
    return save_trace(path, greedy.source, greedy.steps, translation=greedy.output_text, model="tiny")


# ------------------------------------------------------------------------------ 1. a replayed trace
def test_a_trace_replays_steps_attention_and_distribution_without_the_model(trace_file, greedy):
    trace = load_trace(trace_file)

    async def script(app, pilot):
        assert app.loaded is None and "replay, no model" in text_of(app.query_one("#title"))
        assert len(app.decoding.steps) == 1 and app.decoding.source.pieces == greedy.source.pieces
        await keys(pilot, "r")
        d = app.decoding
        assert [s.token for s in d.steps] == [s.token for s in greedy.steps]
        assert d.original.finished and d.original.text == greedy.output_text
        assert greedy.output_text in text_of(app.query_one(SentenceView))
        # the stored cross-attention is what the heatmap draws
        data = app.query_one(Heatmap).data
        assert data.matrix[-1] == pytest.approx(greedy.steps[-1].cross[0].mean(0).tolist(), abs=1e-5)
        dist, best = app.query_one(Distribution), greedy.steps[-1].candidates[0]
        shown = app.view.candidates(app.decoding.steps[-1], None)[0]
        assert dist.option_count == 10 and shown.piece == best.piece
        assert shown.prob == pytest.approx(best.prob, abs=2e-3)  # from the trace's float16 logits
        await keys(pilot, "t")  # the trace keeps the logits: the temperature still re-shapes them
        hotter = app.view.candidates(app.decoding.steps[-1], None)[0]
        assert hotter.piece == best.piece and hotter.prob < shown.prob - 1e-3
        assert f"{hotter.prob:6.1%}".strip() in str(dist.get_option_at_index(0).prompt)
        await keys(pilot, "p", "p")
        assert len(app.decoding.steps) == len(greedy.steps) - 2
        await keys(pilot, "f", "g")  # masked decoder self-attention, the grid
        assert len(app.query_one(Heatmap).data.rows) == app.view.dims.n_decoder_layers * app.view.dims.h
        for key in ("b", "e", "y", "w", "x", "o", "m", "c", "i"):  # model-only keys are hidden and do nothing
            await keys(pilot, key)
            assert app.view.mode == "dist" and app.screen is app.screen_stack[0] and app.view.attribution is None
        assert app.compared is None and app.beam_steps is None and not app.view.heads_off

    drive(None, script, text=None, trace=trace, trace_name=trace_file.name)


def test_inspect_trace_bad_file_is_a_one_line_error(tmp_path, trace_file):
    bad = tmp_path / "bad.trace"
    bad.write_bytes(trace_file.read_bytes()[:100])  # truncated
    runner = CliRunner()
    for path in (bad, tmp_path / "missing.trace"):
        result = runner.invoke(cli, ["inspect", "--trace", str(path)])
        assert result.exit_code == 1 and result.stdout == "" and "Traceback" not in result.stderr
        assert result.stderr.startswith("tt: error:") and len(result.stderr.strip().splitlines()) == 1
    result = runner.invoke(cli, ["inspect", "--trace", str(trace_file), SENTENCE])
    assert result.exit_code == 2 and "--trace" in result.stderr  # a usage error, as click's own
    # a good file gets as far as the terminal check (the model is never loaded)
    result = runner.invoke(cli, ["inspect", "--trace", str(trace_file)])
    assert result.exit_code == 1 and "needs a terminal" in result.stderr


# ------------------------------------------------------------------------------ 2. heads off, live
def test_a_head_off_re_runs_greedy_decoding_and_shows_the_diff(tiny_loaded, greedy):
    from core.model.attention import HeadMask

    off = HeadMask.ones(tiny_loaded.cfg).off("cross", 0, 1).off("cross", 1, 1)
    expected = Stepper(tiny_loaded, SENTENCE, head_mask=off)
    expected.run()

    async def script(app, pilot):
        await keys(pilot, "o")  # the mean of heads is not one head: nothing happens but a notice
        assert app.view.heads_off == frozenset() and app.decoding.ablated is None
        await keys(pilot, "h", "h", "o", "l", "o")  # cross head 1 of layer 0, then of layer 1
        a = app.decoding.ablated
        assert a.heads_off == (("cross", 0, 1), ("cross", 1, 1))
        assert [s.token for s in a.line.steps] == [s.token for s in expected.steps]
        assert [s.token for s in a.intact.steps] == [s.token for s in greedy.steps]
        assert len(app.decoding.steps) == 1  # the stepping view stays on the intact model
        shown = text_of(app.query_one(SentenceView))
        assert "ablated" in shown and "off: cross L1H2, cross L2H2" in shown
        assert "switched off" in app.query_one(Heatmap).data.title
        await keys(pilot, "g")  # the grid marks the heads that are off
        assert [r for r in app.query_one(Heatmap).data.rows if r.endswith("off")] == ["L1H2 off", "L2H2 off"]
        await keys(pilot, "g", "o")  # layer 1 head 1 back on
        assert app.decoding.ablated.heads_off == (("cross", 0, 1),)
        await keys(pilot, "L", "o")
        assert app.decoding.ablated is None and "ablated" not in text_of(app.query_one(SentenceView))

    drive(tiny_loaded, script)


# ------------------------------------------------------------------------------ 3. word links, head ranking
@pytest.fixture(scope="module")
def aligned_loaded(tiny_model_dir, tmp_path_factory):
    """The tiny model with a stored alignment rule: head 1 of layer 0, shift, and a short ranking."""
    import shutil

    from core.align.aer import AlignmentScore
    from core.align.links import AlignRule, save_rule
    from core.checkpoint import load_model

    model_dir = tmp_path_factory.mktemp("aligned") / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    score = lambda aer: AlignmentScore(aer, 0.5, 0.5, 10, 10, 10)  # noqa: E731
    save_rule(
        model_dir,
        [
            (AlignRule(0, 1, shift=True), score(0.41)),
            (AlignRule(1, None), score(0.45)),
            (AlignRule(-1, 0), score(0.52)),
            (AlignRule(1, 0, bidirectional=True), score(0.6)),
        ],
        {"gold": "made up for the test"},
    )
    return load_model(model_dir)


def test_word_links_replace_the_weights_on_cross_attention(aligned_loaded):
    from core.align.links import AlignRule, align_steps, words

    async def script(app, pilot):
        await keys(pilot, "r", "a")
        d, data = app.decoding, app.query_one(Heatmap).data
        rule = AlignRule(0, 1, shift=True)
        assert app.rule == rule and "links: layer 1, head 2, shift, argmax" in data.title  # counted from 1
        links = align_steps(d.source.pieces, list(d.steps), rule)
        src, tgt = words(d.source.pieces), words([s.piece for s in d.steps])
        expected = {(t, s) for i, j in links for t in tgt[j] for s in src[i]}
        assert links and {(t, s) for t, row in enumerate(data.marks) for s, m in enumerate(row) if m} == expected
        await keys(pilot, "a")  # back to the weights
        assert not app.query_one(Heatmap).data.marks and "links:" not in app.query_one(Heatmap).data.title
        await keys(pilot, "a", "f")  # links belong to cross-attention: other families keep their weights
        assert not app.query_one(Heatmap).data.marks

    drive(aligned_loaded, script)


def test_word_links_of_a_full_context_rule_reread_the_output(tiny_model_dir, tmp_path):
    """A rule trained on the unmasked pass (tt train --align-full-context) marks the links of the
    output re-read with the model; a replayed trace, which has no model, falls back to the default rule."""
    import json
    import shutil

    from core.align.links import DEFAULT_RULE, AlignRule, align_steps, full_context_cross, words
    from core.checkpoint import load_model

    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    rule = AlignRule(1, 2, full_context=True)
    (model_dir / "alignment.json").write_text(
        json.dumps({"format": "tt.alignment", "version": 1, "rule": {"layer": 1, "head": 2, "full_context": True}}),
        encoding="utf-8",
    )
    loaded = load_model(model_dir)

    async def script(app, pilot):
        await keys(pilot, "r", "a")
        d, data = app.decoding, app.query_one(Heatmap).data
        assert app.rule == rule and f"links: {rule.describe(2)}" in data.title and "re-reading" not in data.title
        full = full_context_cross(loaded.model, d.source.tokens, [s.token for s in d.steps])
        links = align_steps(d.source.pieces, list(d.steps), rule, full)
        src, tgt = words(d.source.pieces), words([s.piece for s in d.steps])
        expected = {(t, s) for i, j in links for t in tgt[j] for s in src[i]}
        assert links and {(t, s) for t, row in enumerate(data.marks) for s, m in enumerate(row) if m} == expected

    drive(loaded, script)

    trace = tmp_path / "t.json"
    result = CliRunner().invoke(
        cli, ["translate", "--model", str(model_dir), "--greedy", "--trace", str(trace), SENTENCE]
    )
    assert result.exit_code == 0, result.stderr

    async def replay(app, pilot):
        assert app.rule == DEFAULT_RULE and "replay has not" in app._rule_problem

    drive(None, replay, text=None, trace=load_trace(trace))


def test_the_cross_grid_labels_each_head_with_its_aer(aligned_loaded, tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "g")
        data = app.query_one(Heatmap).data
        # best AER per head: index (0, 1) 41% (layer -1 is index 1: (1, 0) min(52%, 60%)); the mean is no head
        labelled = {"L1H2": "L1H2 41%", "L2H1": "L2H1 52%"}  # counted from 1 on screen
        plain = [f"L{layer + 1}H{h + 1}" for layer in range(2) for h in range(app.view.dims.h)]
        assert app.view.dims.n_decoder_layers == 2 and "AER" in data.title
        assert data.rows == [labelled.get(r, r) for r in plain]
        await keys(pilot, "f", "g", "g")  # decoder self-attention heads have no AER
        assert all("%" not in r for r in app.query_one(Heatmap).data.rows)

    drive(aligned_loaded, script)

    async def no_ranking(app, pilot):
        await keys(pilot, "g")
        assert all("%" not in r for r in app.query_one(Heatmap).data.rows)

    drive(tiny_loaded, no_ranking)


def test_the_head_analyze_heads_names_most_needed_has_that_name_in_inspect(tiny_loaded, tiny_model_dir, tmp_path):
    # One numbering (from 1) in both commands: the name `tt analyze heads` prints is the name tt inspect
    # shows for that head once it is selected and switched off, and its title counts the same layer and head.
    from core.model.attention import Head
    from tt_cli.tui.state import FAMILY_KEY_ORDER

    pairs = [("Je suis étudiant.", "I am a student."), ("Le chat dort.", "The cat is sleeping.")]
    (tmp_path / "s.fr").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    (tmp_path / "r.en").write_text("".join(r + "\n" for _, r in pairs), encoding="utf-8")
    args = ["analyze", "heads", "--model", str(tiny_model_dir), "--src", str(tmp_path / "s.fr")]
    table = CliRunner().invoke(cli, [*args, "--ref", str(tmp_path / "r.en")])
    assert table.exit_code == 0, table.stderr
    name = " ".join(" ".join(table.stdout.split()).split("most needed: ")[1].split()[:2])
    head = Head.named(name)
    layer_shown, head_shown = re.fullmatch(r"L(\d+)H(\d+)", name.split()[1]).groups()
    assert str(head) == name and "0" not in (layer_shown, head_shown)
    presses = ["f"] * FAMILY_KEY_ORDER.index(head.family) + ["l"] * head.layer + ["h"] * (head.head + 1)

    async def script(app, pilot):
        await keys(pilot, *presses)
        assert app.view.selected_head() == head
        title = app.query_one(Heatmap).data.title
        assert f"layer {layer_shown} of " in title and f"head {head_shown} of " in title  # the same numbers
        await keys(pilot, "o")
        assert f"off: {name} (o)" in text_of(app.query_one(SentenceView))

    drive(tiny_loaded, script)
