"""The insides views of `tt inspect` (key v): each panel's numbers against core, on several model shapes."""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent

from core.analysis.internals import (
    contextual_similarity,
    ffn_activity,
    parameter_breakdown,
    shape_strip,
    source_walk,
    unscaled_weights,
)
from tests.tui.test_learn import other_shape
from tests.tui.test_tui import SENTENCE, drive, keys, settle, text_of
from tt_cli.tui.app import make_app
from tt_cli.tui.views.data import word_at
from tt_cli.tui.views.panels import PANELS
from tt_cli.tui.views.screen import InsidesScreen, open_insides


def panel(screen, key: str) -> str:
    return "".join(text_of(screen.query_one(f"#panel-{key}")).split())  # wrapping aside


def squeeze(text: str) -> str:
    return "".join(text.split())


def test_every_panel_reads_the_models_numbers(tiny_loaded):
    walk = source_walk(tiny_loaded, SENTENCE)

    async def script(app, pilot):
        await keys(pilot, "r", "v")
        screen = app.screen
        assert isinstance(screen, InsidesScreen) and screen.position == 1 and screen.layer == 0
        assert squeeze(f"“{walk.pieces[1]}”") in squeeze(text_of(screen.query_one("#where")))
        shapes = " × ".join(map(str, dict(shape_strip(walk, 0))["Q = x W^Q, split into heads"]))
        assert squeeze(shapes) in panel(screen, "shapes")
        heads = panel(screen, "heads")
        cfg = tiny_loaded.cfg
        for layer in range(cfg.n_encoder_layers):
            for h in range(cfg.h):
                assert squeeze(f"encoder self {layer + 1}.{h + 1}") in heads
        raw = unscaled_weights(walk.layers[0].attention)[0, :, 1]  # (h, S) the query of piece 1
        assert f"without:max{float(raw[0].max()):.2f}" in panel(screen, "scaling")
        a = ffn_activity(walk, 0, 1)
        assert f"{a.firing}ofd_ff={a.d_ff}" in panel(screen, "ffn")
        assert f"{parameter_breakdown(tiny_loaded.model).total:,}inall" in panel(screen, "ffn")
        t = walk.layers[0].attention_norm
        assert f"μ,σ{float(t.mean[1]):.3f},{float(t.std[1]):.3f}" in panel(screen, "add_norm")
        assert f"‖E·√d‖,‖PE‖{float(walk.embeddings[1].norm()):.2f}" in panel(screen, "embedding")
        assert "PE(1)◀" in panel(screen, "positions") and "k=0" in panel(screen, "positions")
        await keys(pilot, "full_stop", "l")  # the next piece, the next layer
        assert screen.position == 2 and screen.layer == 1 % cfg.n_encoder_layers
        a = ffn_activity(walk, screen.layer, 2)
        assert f"{a.firing}ofd_ff={a.d_ff}" in panel(screen, "ffn")
        await keys(pilot, "escape")
        assert not isinstance(app.screen, InsidesScreen)

    drive(tiny_loaded, script)


def test_contextual_compares_the_word_with_a_typed_sentence(tiny_loaded):
    second = "Nous ne suis pas."
    walk = source_walk(tiny_loaded, SENTENCE)
    start = [i for i, p in enumerate(walk.pieces) if p.startswith("▁")][1]  # the first piece of "suis"

    async def script(app, pilot):
        await keys(pilot, "v")
        screen = app.screen
        await keys(pilot, *["full_stop"] * (start + 1 - screen.position))  # its second piece: the same word
        assert word_at(walk.pieces, screen.position) == "suis"
        await keys(pilot, "c")
        await pilot.press(*second)
        await keys(pilot, "enter")
        await settle(pilot)
        assert screen.query_one(TabbedContent).active == "contextual"
        expected = contextual_similarity(tiny_loaded, "suis", SENTENCE, second)
        shown = panel(screen, "contextual")
        for level, sim in zip(expected.levels, expected.similarity):
            assert squeeze(f"{level}{sim:.3f}") in shown

    drive(tiny_loaded, script, text="Je suis étudiant.")


@pytest.mark.parametrize("overrides", [{"n_encoder_layers": 3, "n_decoder_layers": 1}, {"norm": "pre", "h": 2}])
def test_other_shapes_every_layer_and_piece(tiny_loaded, overrides):
    loaded = other_shape(tiny_loaded, **overrides)

    async def script(app, pilot):
        await keys(pilot, "v")
        screen = app.screen
        n = len(screen.data.walk.layers)
        assert n == loaded.cfg.n_encoder_layers
        for _ in range(n):
            for key in PANELS:
                assert panel(screen, key), key
            await keys(pilot, "l", "full_stop")
        assert screen.layer == 0  # wrapped round
        heads = panel(screen, "heads")
        assert heads.count("decoderself") == loaded.cfg.n_decoder_layers * loaded.cfg.h

    drive(loaded, script)


def test_snapshot_add_and_norm_on_live_activations(snap_compare):
    from core.checkpoint import load_model
    from tests.conftest import FIXTURES

    async def run_before(pilot) -> None:
        await settle(pilot)
        open_insides(pilot.app, tab="add_norm")  # opened on the tab: no underline caught mid-animation
        await settle(pilot)
        assert pilot.app.screen.query_one(TabbedContent).active == "add_norm"

    app = make_app(load_model(FIXTURES / "tiny_model"), SENTENCE)
    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
