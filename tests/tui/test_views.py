"""`tt inspect` views of core/analysis: attribution in the heatmap (i), the logit lens (y), a
teacher-forced reference (--ref) and attention sinks in the grid, through Pilot on the tiny real model."""

from __future__ import annotations

import pytest
import torch

from core.analysis.attribute import attribute
from core.analysis.lens import logit_lens
from tests.tui.test_tui import SENTENCE, drive, keys, settle, text_of
from tt_cli.tui.picture import attribution_matrix
from tt_cli.tui.widgets.heatmap import Heatmap
from tt_cli.tui.widgets.lens import LensView


def test_i_cycles_the_heatmap_through_attention_ixg_and_ig_of_the_same_steps(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "n", "n")
        attention = app.query_one(Heatmap).data
        src, out = list(app.decoding.source.tokens), [s.token for s in app.decoding.steps]
        for method, name in (("ixg", "input × gradient"), ("ig", "integrated gradients")):
            await keys(pilot, "i")
            data = app.query_one(Heatmap).data
            assert app.view.attribution == method and name in data.title
            expected = attribution_matrix(attribute(tiny_loaded, src, out, method=method))
            assert torch.allclose(torch.tensor(data.matrix), expected, atol=1e-5)
            assert data.rows == attention.rows  # the same steps, one key apart
            assert data.cols[: len(app.decoding.source.pieces)] == list(app.decoding.source.pieces)
            assert "attribution" in str(app.query_one("#cell").content) and method in str(
                app.query_one("#cell").content
            )
        await keys(pilot, "n")  # a step re-computes the attribution of the new decoding
        assert len(app.query_one(Heatmap).data.rows) == len(app.decoding.steps) == len(out) + 1
        assert app.attributed.key[0] is app.decoding
        await keys(pilot, "i")
        assert app.view.attribution is None and "attribution" not in app.query_one(Heatmap).data.title

    drive(tiny_loaded, script)


def test_y_shows_each_decoder_layers_top_pieces_for_the_current_step(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "n", "y")
        assert app.view.mode == "lens"
        d = app.decoding
        expected = logit_lens(tiny_loaded, list(d.source.tokens), [s.token for s in d.steps], top_k=5)[-1]
        shown = text_of(app.query_one(LensView))
        assert len(expected.layers) == tiny_loaded.cfg.n_decoder_layers
        for layer in expected.layers:
            assert f"{layer.top[0].prob:.2f}" in shown
        assert app.lensed.value[-1].layers[-1].top[0].token == expected.layers[-1].top[0].token
        await keys(pilot, "n")  # the lens follows the step
        assert app.lensed.key is app.decoding and len(app.lensed.value) == len(d.steps) + 1
        await keys(pilot, "y")
        assert app.view.mode == "dist"

    drive(tiny_loaded, script)


REFERENCE = "I am a student."


def test_ref_teacher_forces_the_reference_and_marks_the_first_divergence(tiny_loaded):
    from core.analysis.reference import compare_pairs
    from tt_cli.tui.widgets.reference import ReferenceView
    from tt_cli.tui.widgets.sentence import SentenceView

    expected = compare_pairs(tiny_loaded, [(SENTENCE, REFERENCE)])[0]

    async def script(app, pilot):
        c = app.compared
        assert app.view.mode == "ref" and c is not None
        assert [(s.ref_token, s.ref_rank, s.model_token) for s in c.steps] == [
            (s.ref_token, s.ref_rank, s.model_token) for s in expected.steps
        ]
        assert c.first_divergence == expected.first_divergence
        shown = text_of(app.query_one(ReferenceView))
        for s in expected.steps:
            assert f"{s.ref_prob:.2f}" in shown
        sentence = text_of(app.query_one(SentenceView))
        assert "ref" in sentence
        if expected.first_divergence is not None:
            assert f"first divergence at step {expected.first_divergence}" in sentence
        await keys(pilot, "c")  # c toggles the panel back to the distribution
        assert app.view.mode == "dist"
        await keys(pilot, "c")
        assert app.view.mode == "ref"

    drive(tiny_loaded, script, reference=REFERENCE)


def test_c_without_ref_asks_for_one(tiny_loaded):
    from tt_cli.tui.screens.ask import AskScreen

    async def script(app, pilot):
        await keys(pilot, "c")
        assert isinstance(app.screen, AskScreen)
        await pilot.press(*REFERENCE, "enter")
        await settle(pilot)
        assert app.compared is not None and app.compared.reference == REFERENCE and app.view.mode == "ref"

    drive(tiny_loaded, script)


def test_cli_ref_needs_the_model_and_a_text(tiny_model_dir, tmp_path):
    from typer.testing import CliRunner

    from tt_cli.main import app as cli

    empty = CliRunner().invoke(cli, ["inspect", "--model", str(tiny_model_dir), "--ref", " ", SENTENCE])
    assert empty.exit_code == 1 and "reference is empty" in empty.output
    with_trace = CliRunner().invoke(cli, ["inspect", "--trace", str(tmp_path / "x.trace"), "--ref", REFERENCE])
    assert with_trace.exit_code == 1


def test_the_grid_marks_the_heads_that_park_their_attention(tiny_loaded):
    """The app asks sinks.py once, on the model thread, and marks exactly the heads it flags. The
    tiny model parks no head on this sentence (no share reaches 0.5), so the marks themselves are
    checked on picture() with a flagged head given."""
    from core.analysis.sinks import head_sinks
    from core.decode.stepper import Stepper
    from tt_cli.tui.picture import SINK, picture
    from tt_cli.tui.session import Session

    greedy = Stepper(tiny_loaded, SENTENCE)
    greedy.run()
    parked = {
        (h.family, h.layer, h.head): h.parks_on
        for h in head_sinks(tiny_loaded, [(SENTENCE, greedy.output_text)])
        if h.parks_on
    }

    async def script(app, pilot):
        await keys(pilot, "g")
        assert (app.sinks.key, app.sinks.value) == ((SENTENCE, None), parked)
        for _ in range(3):  # cross → decoder self → encoder self
            data = app.query_one(Heatmap).data
            h = tiny_loaded.cfg.h
            marked = {(app.view.family, i // h, i % h) for i, row in enumerate(data.rows) if SINK in row}
            assert marked == {k for k in parked if k[0] == app.view.family}
            await keys(pilot, "f")

    drive(tiny_loaded, script)

    session = Session(tiny_loaded)
    d = session.start(SENTENCE)
    grid = view_grid(tiny_loaded)
    data = picture(grid, d, sinks={("cross", 0, 1): ["eos"]})
    assert data.rows[1] == f"L0 h1{SINK}" and [r for r in data.rows if SINK in r] == [data.rows[1]]
    assert SINK in data.title and SINK not in picture(grid, d).title


def view_grid(loaded):
    from tt_cli.tui.state import ViewState

    return ViewState.for_model(loaded.cfg).toggle_grid()


def test_a_replayed_trace_says_these_views_need_the_model(tiny_loaded, tmp_path):
    from core.analysis.tracefile import load_trace, save_trace
    from core.decode.stepper import Stepper

    greedy = Stepper(tiny_loaded, SENTENCE)
    greedy.run()
    path = save_trace(tmp_path / "t.trace", greedy.source, greedy.steps, translation=greedy.output_text, model="tiny")

    async def script(app, pilot):
        await keys(pilot, "i", "y", "c", "g")
        assert app.view.attribution is None and app.view.mode == "dist" and app.compared is None
        assert app.sinks.value is None and app.pending == 0  # nothing was asked of a model that is not there
        assert sum("needs the model" in n.message for n in app._notifications) == 3

    drive(None, script, text=None, trace=load_trace(path))


def test_run_scrubs_the_sentence_across_checkpoints(tmp_path):
    from typer.testing import CliRunner

    from core.analysis.scrub import scrub
    from core.train.config import TrainConfig
    from core.train.trainer import Trainer
    from tests.conftest import TINY_TSV
    from tt_cli.main import app as cli
    from tt_cli.tui.widgets.sentence import SentenceView

    cfg = TrainConfig(
        data=[str(TINY_TSV)],
        out=str(tmp_path / "run"),
        preset="tiny",
        vocab_size=120,
        max_steps=40,
        warmup=20,
        max_tokens=512,
        valid_every=0,
        save_every=20,
        keep_last=0,
        bleu_sample=0,
        seed=1,
        model_overrides={"max_len": 64},
    )
    Trainer(cfg).run()
    points = list(scrub(tmp_path / "run", SENTENCE, top_k=5))
    assert [p.step for p in points] == [20, 40]

    async def script(app, pilot):
        assert "checkpoint step 40 (2/2)" in text_of(app.query_one("#title"))
        await keys(pilot, "r")
        assert [s.token for s in app.decoding.steps] == [s.token for s in points[1].steps]
        await keys(pilot, "left_square_bracket")
        assert "checkpoint step 20 (1/2)" in text_of(app.query_one("#title"))
        n = min(len(points[0].steps), len(points[1].steps))
        assert [s.token for s in app.decoding.steps][:n] == [s.token for s in points[0].steps][:n]
        if app.decoding.original.finished:  # the older checkpoint's output is not longer: all of it is shown
            assert app.decoding.original.text == points[0].translation
            assert points[0].translation in text_of(app.query_one(SentenceView))
        data = app.query_one(Heatmap).data  # that checkpoint's cross-attention, mean of heads, layer 0
        assert data.matrix[0] == pytest.approx(points[0].steps[0].cross[0].mean(0).tolist(), abs=1e-5)
        await keys(pilot, "left_square_bracket")  # stays at the oldest
        assert "(1/2)" in text_of(app.query_one("#title"))

    drive(None, script, text=None, scrub=points, run_name="run")

    missing = CliRunner().invoke(cli, ["inspect", "--run", str(tmp_path / "nope"), SENTENCE])
    assert missing.exit_code == 1 and "no such run directory" in missing.output
