"""`tt inspect` views of core/analysis: attribution in the heatmap (i), the logit lens (y), a
teacher-forced reference (--ref) and attention sinks in the grid, through Pilot on the tiny real model."""

from __future__ import annotations

import torch

from core.analysis.attribute import attribute
from core.analysis.lens import logit_lens
from tests.test_tui import SENTENCE, drive, keys, settle, text_of
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
            assert "attribution" in str(app.query_one("#cell").content) and method in str(app.query_one("#cell").content)
        await keys(pilot, "n")  # a step re-computes the attribution of the new decoding
        assert len(app.query_one(Heatmap).data.rows) == len(app.decoding.steps) == len(out) + 1
        assert app._attributed[0] is app.decoding
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
        assert app._lensed[1][-1].layers[-1].top[0].token == expected.layers[-1].top[0].token
        await keys(pilot, "n")  # the lens follows the step
        assert app._lensed[0] is app.decoding and len(app._lensed[1]) == len(d.steps) + 1
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
        assert [(s.ref_token, s.ref_rank, s.model_token) for s in c.steps] == \
            [(s.ref_token, s.ref_rank, s.model_token) for s in expected.steps]
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
