"""What a new user of `tt inspect` tripped over, each pinned: restart, Ctrl-C, how to leave each
screen, one numbering, a replayed trace's keys and attribution, screenshot names, an 80×24 terminal."""

from __future__ import annotations

import pytest
import torch

from core.analysis.attribute import attribute
from core.analysis.tracefile import load_trace, save_trace
from core.decode.stepper import Stepper
from tests.tui.test_tui import SENTENCE, drive, keys, text_of
from tt_cli.tui.picture import attribution_matrix
from tt_cli.tui.screens.ask import AskScreen
from tt_cli.tui.screens.help import HelpScreen
from tt_cli.tui.screens.views import ViewsScreen
from tt_cli.tui.widgets.footer import Footer
from tt_cli.tui.widgets.heatmap import Heatmap

MODEL_KEYS = {"w": "what-if", "b": "beam", "e": "explain", "m": "masks"}  # the footer's words for them


@pytest.fixture(scope="module")
def greedy(tiny_loaded):
    stepper = Stepper(tiny_loaded, SENTENCE)
    stepper.run()
    return stepper


def footer_words(app) -> set[str]:
    """The descriptions the footer shows (Footer.shown: what its compose draws)."""
    return {description for _, (_, description, *_) in app.screen.query_one(Footer).shown()[3]}


def help_text(app) -> str:
    return "\n".join(text_of(w) for w in app.screen.query("Static"))


def test_ctrl_c_quits_from_the_view_and_from_a_dialog(tiny_loaded):
    for opening in ((), ("w",)):  # the main view; the what-if dialog, whose text field takes ctrl+c as copy

        async def script(app, pilot, opening=opening):
            await keys(pilot, *opening)
            assert isinstance(app.screen, AskScreen) == bool(opening)
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app._exit, "ctrl+c did not quit"

        drive(tiny_loaded, script)


def test_the_help_and_every_dialog_say_how_to_leave(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = help_text(app)
        assert "esc, q or ? closes this help" in shown and "ctrl+c quits" in shown
        await keys(pilot, "escape", "w")
        assert isinstance(app.screen, AskScreen) and "esc: cancel" in help_text(app)
        await keys(pilot, "escape", "m")
        assert isinstance(app.screen, ViewsScreen) and "back" in footer_words(app)  # the footer: esc back
        await keys(pilot, "escape")
        assert len(app.screen_stack) == 1

    drive(tiny_loaded, script)


def test_steps_layers_and_heads_count_from_1_everywhere(tiny_loaded, greedy):
    cfg = tiny_loaded.cfg

    async def script(app, pilot):
        await keys(pilot, "n", "h")  # step 2 on screen; head index 0
        assert f"step 2 · limit {app.decoding.limit}" in text_of(app.query_one("SentenceView"))  # taken, not "of"
        assert "step 2 chose" in app.query_one("#dist").border_subtitle
        title = app.query_one(Heatmap).data.title
        assert f"layer 1 of {cfg.n_decoder_layers}" in title and f"head 1 of {cfg.h}" in title
        assert "layer 1 · head 1" in text_of(app.query_one("#cell"))
        await keys(pilot, "b")
        assert "beam step 1 of" in app.query_one("#beam").border_subtitle
        await keys(pilot, "b", "y")
        assert "step 2 →" in app.query_one("#lens").border_subtitle
        await keys(pilot, "y", "w")
        assert "Piece to force at step 2 " in help_text(app)

    drive(tiny_loaded, script)


def trace_of(loaded, greedy, path, method: str | None = None):
    attr = None
    if method is not None:
        attr = attribute(loaded, list(greedy.source.tokens), [s.token for s in greedy.steps], method=method)
    save_trace(path, greedy.source, greedy.steps, translation=greedy.output_text, model="tiny", attribution=attr)
    return load_trace(path), attr


def test_a_replay_hides_the_keys_that_need_the_model(tiny_loaded, greedy, tmp_path):
    async def live(app, pilot):
        assert set(MODEL_KEYS.values()) <= footer_words(app)  # the control: shown with the model

    drive(tiny_loaded, live)
    trace, _ = trace_of(tiny_loaded, greedy, tmp_path / "t.trace")

    async def replay(app, pilot):
        assert not set(MODEL_KEYS.values()) & footer_words(app) and {"step", "grid", "help"} <= footer_words(app)
        await keys(pilot, "question_mark")
        listed = help_text(app)
        assert "grid:" in listed and "masks and positional" not in listed and "beam mode: hyp" not in listed
        assert "what-if: type" not in listed and "logit lens" not in listed and "attention → input" not in listed
        assert "continue decoding from the highlighted" not in listed  # enter on a candidate: a what-if
        await keys(pilot, "escape", "i", "y", "c", "g")
        assert app.view.attribution is None and app.view.mode == "dist" and app.compared is None
        assert app.sinks.value is None and app.pending == 0  # nothing was asked of a model that is not there

    drive(None, replay, text=None, trace=trace)


def test_i_on_a_replayed_trace_shows_the_attribution_it_holds(tiny_loaded, greedy, tmp_path):
    trace, attr = trace_of(tiny_loaded, greedy, tmp_path / "a.trace", "ixg")
    n_src = len(greedy.source.pieces)

    async def script(app, pilot):
        await keys(pilot, "n", "n")  # three of the stored steps on screen
        await keys(pilot, "question_mark")
        assert "attention → input" in help_text(app)
        await keys(pilot, "escape", "i")
        data = app.query_one(Heatmap).data
        assert app.view.attribution == "ixg" and "input × gradient" in data.title
        expected = attribution_matrix(attr)[:3, : n_src + 3]  # the steps on screen and their inputs
        torch.testing.assert_close(torch.tensor(data.matrix), expected, atol=1e-6, rtol=0)
        assert "attribution" in text_of(app.query_one("#cell"))
        await keys(pilot, "i")  # the trace holds one method: back to attention
        assert app.view.attribution is None and "attention" in app.query_one(Heatmap).data.title

    drive(None, script, text=None, trace=trace)


def test_screenshots_never_take_each_others_name(tiny_loaded, tmp_path):
    async def script(app, pilot):
        paths = [app.action_save_svg() for _ in range(3)]  # within one second: the same timestamp
        assert len(set(paths)) == 3 and all(p.parent == tmp_path for p in paths)
        assert all(p.read_text(encoding="utf-8").startswith("<svg") for p in paths)
        (tmp_path / "gone").mkdir()
        app.svg_dir = tmp_path / "gone" / "deeper"  # a folder that is not there: a notice, no crash
        assert app.action_save_svg() is None
        await pilot.pause()
        assert "screenshot not saved" in list(app._notifications)[-1].message

    drive(tiny_loaded, script, svg_dir=tmp_path)


LONG = "Il est très difficile de trouver un appartement dans le centre de la ville en été."


def test_at_80x24_help_quit_the_panels_and_the_help_stay_in_view(tiny_loaded):
    from textual.containers import VerticalScroll
    from textual.widgets._footer import FooterKey

    async def script(app, pilot):
        shown = {k.description: k.region for k in app.query(FooterKey)}
        assert shown["help"].right <= 80 and shown["quit"].right <= 80, shown
        assert app.query_one("#right").region.width == 38 and app.query_one(Heatmap).region.width >= 40
        heatmap = app.query_one(Heatmap)
        assert heatmap.data.current_row in heatmap._window()[0]  # the step's row is in view under a wrapped title
        await keys(pilot, "question_mark")
        assert app.screen.query_one(VerticalScroll).region.right <= 80

    drive(tiny_loaded, script, size=(80, 24))

    async def wide(app, pilot):
        assert app.query_one("#right").region.width == 54  # the control: the wide layout is left as it was

    drive(tiny_loaded, wide)


def test_a_long_sentence_keeps_readable_key_labels_at_80_columns():
    from pathlib import Path

    from core.checkpoint import load_model
    from core.decode.trace import piece_label

    shipped = load_model(Path(__file__).parents[2] / "weights")

    async def script(app, pilot):
        await keys(pilot, "r")
        heatmap = app.query_one(Heatmap)
        width, cols = heatmap._cell_width(), heatmap._window()[1]
        header = "\n".join(text_of(heatmap).splitlines()[1:3])  # the two staggered label lines
        assert len(cols) >= 5 and 2 * width - 1 >= 7
        for j in cols:  # each key in view shows at least 6 characters of its piece (7 with the "…")
            assert piece_label(heatmap.data.cols[j], 2 * width - 1) in header

    drive(shipped, script, text=LONG, size=(80, 24))


def test_the_keys_no_other_test_presses_do_what_the_help_says(tiny_loaded, greedy):
    """T, k, → and ← (with the candidates list focused, as the app starts), q: each against its help line."""
    from tt_cli.tui.widgets.distribution import Distribution

    async def script(app, pilot):
        dist = app.query_one(Distribution)
        assert app.focused is dist
        await keys(pilot, "k")  # one more candidate
        assert app.view.top_k == 11 and dist.option_count == 11
        await keys(pilot, "T")  # temperature down: sharper
        assert app.view.temperature == pytest.approx(0.8) and "temp 0.80" in str(dist.border_title)
        await keys(pilot, "right", "right")  # the next step, twice
        assert [s.token for s in app.decoding.steps] == [s.token for s in greedy.steps[:3]]
        await keys(pilot, "left")  # a step back
        assert len(app.decoding.steps) == 2
        await pilot.press("q")
        await pilot.pause()
        assert app._exit

    drive(tiny_loaded, script)
