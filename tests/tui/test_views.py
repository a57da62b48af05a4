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
    assert data.rows[1] == f"L1H2{SINK}" and [r for r in data.rows if SINK in r] == [data.rows[1]]
    assert SINK in data.title and SINK not in picture(grid, d).title


def view_grid(loaded):
    from tt_cli.tui.state import ViewState

    return ViewState.for_model(loaded.cfg).toggle_grid()


def test_run_scrubs_the_sentence_across_checkpoints(tmp_path):
    from core.analysis.scrub import scrub
    from core.train.config import TrainConfig
    from core.train.trainer import Trainer
    from tests.conftest import TINY_TSV
    from tests.tui.terminal import Terminal
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
        assert "training step 40 (checkpoint 2 of 2)" in text_of(app.query_one("#title"))
        await keys(pilot, "r")
        assert [s.token for s in app.decoding.steps] == [s.token for s in points[1].steps]
        await keys(pilot, "left_square_bracket")
        assert "training step 20 (checkpoint 1 of 2)" in text_of(app.query_one("#title"))
        n = min(len(points[0].steps), len(points[1].steps))
        assert [s.token for s in app.decoding.steps][:n] == [s.token for s in points[0].steps][:n]
        if app.decoding.original.finished:  # the older checkpoint's output is not longer: all of it is shown
            assert app.decoding.original.text == points[0].translation
            assert points[0].translation in text_of(app.query_one(SentenceView))
        data = app.query_one(Heatmap).data  # that checkpoint's cross-attention, mean of heads, layer 0
        assert data.matrix[0] == pytest.approx(points[0].steps[0].cross[0].mean(0).tolist(), abs=1e-5)
        await keys(pilot, "left_square_bracket")  # stays at the oldest
        assert "(checkpoint 1 of 2)" in text_of(app.query_one("#title"))
        await keys(pilot, "right_square_bracket")
        assert "training step 40 (checkpoint 2 of 2)" in text_of(app.query_one("#title"))

    drive(None, script, text=None, scrub=points, run_name="run")

    shots = tmp_path / "shots"  # the real command, in a terminal: --run reaches the screen
    shots.mkdir()
    tt = Terminal(["--run", str(tmp_path / "run"), "--svg-dir", str(shots), SENTENCE], shots, tmp_path)
    try:
        tt.screen_until(lambda s: "training step 40 (checkpoint 2 of 2)" in s, "the last checkpoint")
        tt.press("[")
        tt.screen_until(lambda s: "training step 20 (checkpoint 1 of 2)" in s, "the first checkpoint")
    finally:
        assert tt.quit() == 0, tt.tail()


@pytest.mark.isa  # the tiny model is trained in the test: its output must have three words
def test_the_reference_summary_names_the_step_where_the_model_leaves_it(tiny_loaded):
    """A reference that is the greedy output up to one changed word: the model agrees with it on
    every piece before that word (the same prefix it decoded), so the first divergence is exactly
    the changed word's first piece: step k + 1 on screen (k pieces before it)."""
    from core.decode.stepper import Stepper
    from tt_cli.tui.widgets.reference import ReferenceView
    from tt_cli.tui.widgets.sentence import SentenceView

    greedy = Stepper(tiny_loaded, SENTENCE)
    greedy.run()
    words = greedy.output_text.split()
    assert len(words) >= 3
    reference = " ".join([*words[:2], "zebra", *words[3:]])
    ref_pieces = tiny_loaded.tokenizer.encode_pieces(reference)
    out_pieces = [s.piece for s in greedy.steps]
    k = next(i for i, (a, b) in enumerate(zip(ref_pieces, out_pieces)) if a != b)
    assert k >= 2  # "I am" (or what the model said) comes first

    async def script(app, pilot):
        assert app.compared.first_divergence == k
        summary = f"first divergence at step {k + 1}: reference {ref_pieces[k].replace(chr(0x2581), '·')}"
        assert summary in text_of(app.query_one(SentenceView))
        table = text_of(app.query_one(ReferenceView))
        assert summary in table
        steps = app.compared.steps
        assert all(s.agrees for s in steps[:k]) and not steps[k].agrees

    drive(tiny_loaded, script, reference=reference)


def test_the_grid_draws_a_sink_mark_on_the_head_that_parks():
    """The committed fixed-weights model parks encoder layer 1's head 0 wholly on </s> for this
    sentence (share 1.0, far from the 0.5 threshold): the grid must draw its mark, on screen."""
    from core.analysis.sinks import head_sinks
    from core.checkpoint import load_model
    from tests.conftest import FIXTURES
    from tt_cli.tui.picture import SINK

    fixed, sentence = load_model(FIXTURES / "tiny_model"), "Le chat dort."
    greedy = greedy_text(fixed, sentence)
    parked = {(h.family, h.layer, h.head) for h in head_sinks(fixed, [(sentence, greedy)]) if h.parks_on}
    assert ("encoder_self", 1, 0) in parked

    async def script(app, pilot):
        await keys(pilot, "f", "f", "g")  # encoder self-attention, the grid
        assert app.view.family == "encoder_self" and app.view.grid
        shown = text_of(app.query_one(Heatmap))
        h = fixed.cfg.h
        rows = [line[:10] for line in shown.splitlines() if line.strip().startswith("L")]  # L1H1 …
        assert len(rows) == fixed.cfg.n_encoder_layers * h
        marked = {i for i, label in enumerate(rows) if SINK in label}
        assert marked == {layer * h + head for f, layer, head in parked if f == "encoder_self"}
        assert f"L2H1{SINK}" in shown and SINK in shown.splitlines()[0]  # the row label and the title's key

    drive(fixed, script, text=sentence)


def greedy_text(loaded, sentence: str) -> str:
    from core.decode.stepper import Stepper

    stepper = Stepper(loaded, sentence)
    stepper.run()
    return stepper.output_text
