"""`tt inspect`: behaviour through Textual's Pilot on the tiny real model; look through snapshots."""

from __future__ import annotations

import asyncio
import gc
import io
from typing import ClassVar

import pytest
import torch
from textual.app import App
from textual.binding import Binding
from textual.widgets import Static
from typer.testing import CliRunner

from core.decode.method import EXTRA_LEN
from core.decode.stepper import Stepper
from tests.conftest import FIXTURES
from tt_cli.main import app as cli
from tt_cli.tui.app import make_app
from tt_cli.tui.screens.ask import AskScreen
from tt_cli.tui.screens.help import HelpScreen
from tt_cli.tui.screens.views import ViewsScreen
from tt_cli.tui.widgets.beam import BeamView
from tt_cli.tui.widgets.distribution import Distribution
from tt_cli.tui.widgets.footer import Footer
from tt_cli.tui.widgets.heatmap import Heatmap

SENTENCE = "Je suis étudiant."
SIZE = (120, 40)


def text_of(widget) -> str:
    """What a widget shows, as plain text (its rich renderable printed without colour)."""
    from rich.console import Console

    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(widget.content if hasattr(widget, "content") and not isinstance(widget, Heatmap) else widget.render())
    return console.export_text()


async def settle(pilot) -> None:
    """Wait until the model thread has run every queued job and the screen has caught up.

    Idle twice in a row: a redraw posts the heatmap's CellSelected, whose handler may queue more."""
    app, idle = pilot.app, 0
    for _ in range(1000):
        await pilot.pause(0.01)
        idle = idle + 1 if app.pending == 0 else 0
        if idle == 2:
            await pilot.pause()
            return
    raise AssertionError("the model thread did not finish")


async def keys(pilot, *names: str) -> None:
    for name in names:
        await pilot.press(name)
        await settle(pilot)


def drive(loaded, script, text: str | None = SENTENCE, *, size: tuple[int, int] = SIZE, **options) -> None:
    """Run `script(app, pilot)` inside a live app (sync test, no asyncio plugin needed)."""

    async def main() -> None:
        app = make_app(loaded, text, **options)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await script(app, pilot)

    asyncio.run(main())


@pytest.fixture(scope="module")
def greedy_steps(tiny_loaded):
    stepper = Stepper(tiny_loaded, SENTENCE)
    stepper.run()
    return stepper


def test_step_back_run_restart(tiny_loaded, greedy_steps):
    async def script(app, pilot):
        assert len(app.decoding.steps) == 1  # the app takes the first step on its own
        await keys(pilot, "n", "n")
        assert [s.token for s in app.decoding.steps] == [s.token for s in greedy_steps.steps[:3]]
        heatmap = app.query_one(Heatmap)
        assert len(heatmap.data.rows) == 3 and heatmap.data.current_row == 2
        await keys(pilot, "p")
        assert len(app.decoding.steps) == 2 and len(heatmap.data.rows) == 2
        await keys(pilot, "r")
        assert app.decoding.active.finished and app.decoding.active.text == greedy_steps.output_text
        assert greedy_steps.output_text in text_of(app.query_one("SentenceView"))
        await keys(pilot, "0")  # back to the first step, as the app starts
        assert [s.token for s in app.decoding.steps] == [greedy_steps.steps[0].token] and len(heatmap.data.rows) == 1
        await keys(pilot, "r", "home")  # home too, with the candidates list focused (its own home is "first")
        assert app.focused is app.query_one(Distribution) and len(app.decoding.steps) == 1

    drive(tiny_loaded, script)


def test_families_layers_heads_and_grid(tiny_loaded, greedy_steps):
    cfg = tiny_loaded.cfg

    async def script(app, pilot):
        await keys(pilot, "r")
        heatmap = app.query_one(Heatmap)
        last = greedy_steps.steps[-1]
        # Cross-attention, mean of heads: the last row is the last step's weights averaged over heads.
        assert heatmap.data.rows[-1] == last.piece
        assert heatmap.data.matrix[-1] == pytest.approx(last.cross[0].mean(0).tolist(), abs=1e-6)
        await keys(pilot, "l", "h", "h")
        assert (
            (app.view.layer, app.view.head) == (1, 1)
            and f"layer 2 of {cfg.n_decoder_layers}" in heatmap.data.title
            and f"head 2 of {cfg.h}" in heatmap.data.title
        )
        assert heatmap.data.matrix[-1] == pytest.approx(last.cross[1][1].tolist(), abs=1e-6)
        await keys(pilot, "H", "H")
        assert app.view.head is None
        await keys(pilot, "f")  # masked decoder self-attention: the future is hidden
        assert app.view.family == "decoder_self" and "masked" in heatmap.data.title
        assert heatmap.data.cols[0] == "<s>" and heatmap.data.hidden[0][1] and not heatmap.data.hidden[1][1]
        assert heatmap.data.matrix[0][1:] == [0.0] * (len(heatmap.data.cols) - 1)
        await keys(pilot, "f")
        assert app.view.family == "encoder_self" and heatmap.data.rows == greedy_steps.source.pieces
        await keys(pilot, "f", "g")  # back to cross; the grid of every layer × head
        assert app.view.family == "cross" and len(heatmap.data.rows) == cfg.n_decoder_layers * cfg.h
        assert heatmap.data.rows[cfg.h + 2] == "L2H3"  # layer 1, head 2 counted from 1
        assert heatmap.data.matrix[cfg.h + 2] == pytest.approx(last.cross[1][2].tolist(), abs=1e-6)

    drive(tiny_loaded, script)


def test_selecting_a_cell_shows_its_weight_and_tokens(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "n", "n")
        heatmap = app.query_one(Heatmap)
        heatmap.focus()
        await keys(pilot, "up", "right", "right")
        assert heatmap.cursor == (1, 2)
        cell = text_of(app.query_one("#cell"))
        weight = heatmap.data.matrix[1][2]
        assert f"{weight:.4f}" in cell and "step 2" in cell and "position 2" in cell
        await keys(pilot, "left")  # with the heatmap focused, arrows move the cell, not the decoding
        assert heatmap.cursor == (1, 1) and len(app.decoding.steps) == 3
        # A click on a cell selects it: row 0 is drawn under the title and the key labels (one line,
        # or two when the labels are staggered), columns after the row labels.
        region, width = heatmap.content_region, heatmap._cell_width()
        top = heatmap._title_lines() + heatmap._header_lines(width)
        await pilot.click(
            Heatmap, offset=(region.x - heatmap.region.x + 11 + 3 * width + 1, region.y - heatmap.region.y + top)
        )
        await settle(pilot)
        assert heatmap.cursor == (0, 3)

    drive(tiny_loaded, script)


def test_a_long_sentence_scrolls_instead_of_spilling(tiny_loaded):
    long = " ".join(["Je suis étudiant et tu es professeur."] * 4)

    async def script(app, pilot):
        heatmap = app.query_one(Heatmap)
        n_keys = len(app.decoding.source.tokens)
        await keys(pilot, "f", "f")  # encoder self-attention: source × source
        width = heatmap.content_size.width
        shown = text_of(heatmap).splitlines()
        assert n_keys * 3 > width and f"/{n_keys} · tab ←↑↓→" in text_of(heatmap)  # how to scroll
        assert max(len(line.rstrip()) for line in shown[1:]) <= width  # the title may wrap; the grid may not
        heatmap.focus()
        await settle(pilot)
        assert text_of(heatmap).rstrip().endswith(f"/{n_keys} · ←↑↓→")  # focused: the arrows alone
        await keys(pilot, *["right"] * n_keys, *["down"] * n_keys)
        assert heatmap.cursor == (n_keys - 1, n_keys - 1)
        assert "</s>" in text_of(heatmap).splitlines()[-2]  # the last row is in view
        assert f"{heatmap.data.matrix[-1][-1]:.4f}" in text_of(app.query_one("#cell"))

    drive(tiny_loaded, script, text=long)


def test_temperature_and_top_k_reshape_the_distribution(tiny_loaded):
    async def script(app, pilot):
        dist = app.query_one(Distribution)
        assert dist.option_count == 10
        step = app.decoding.steps[-1]
        before = app.view.candidates(step, tiny_loaded.tokenizer)[0].prob
        await keys(pilot, "t", "t", "K", "K")
        assert app.view.temperature == pytest.approx(1.5625) and app.view.top_k == 8
        assert dist.option_count == 8 and "temp 1.56" in str(dist.border_title)
        after = app.view.candidates(step, tiny_loaded.tokenizer)[0].prob
        assert after < before  # a higher temperature flattens the distribution
        assert f"{after:6.1%}".strip() in str(dist.get_option_at_index(0).prompt)

    drive(tiny_loaded, script)


def test_what_if_from_a_candidate_and_from_a_typed_piece(tiny_loaded, greedy_steps):
    async def script(app, pilot):
        await keys(pilot, "n")  # step 1
        runner_up = app.decoding.steps[1].candidates[1].token
        dist = app.query_one(Distribution)
        dist.focus()
        dist.highlighted = 1
        await keys(pilot, "enter")
        assert app.decoding.branch is not None and app.decoding.active is app.decoding.branch
        assert app.decoding.branch.steps[1].token == runner_up and app.decoding.branch.steps[1].forced
        assert app.decoding.original.text == greedy_steps.output_text  # run to the end, untouched
        assert "what-if" in text_of(app.query_one("SentenceView"))
        await keys(pilot, "r")
        assert app.decoding.branch.finished and [s.token for s in app.decoding.branch.steps[:2]] == [
            greedy_steps.tokens[0],
            runner_up,
        ]
        await keys(pilot, "x")
        assert app.decoding.branch is None and app.decoding.active is app.decoding.original
        # Typing a piece: "▁student" may not exist in a 120-piece vocabulary, so take a real one.
        piece = tiny_loaded.tokenizer.pieces([app.decoding.steps[-1].candidates[2].token])[0]
        await keys(pilot, "w")
        assert isinstance(app.screen, AskScreen)
        await pilot.press(*piece.replace("\u2581", ""))
        await keys(pilot, "enter")
        assert app.decoding.branch is not None and app.decoding.branch.steps[
            -1
        ].token == tiny_loaded.tokenizer.piece_id(piece)
        await keys(pilot, "x", "w")
        await pilot.press(*"zzqx")
        await keys(pilot, "enter")
        assert app.decoding.branch is None  # not a piece: a notification, no branch

    drive(tiny_loaded, script)


def test_beam_mode_shows_hypotheses_and_reranking(tiny_loaded):
    from core.analysis.beam import beam_steps

    async def script(app, pilot):
        await keys(pilot, "b")
        assert app.view.mode == "beam" and app.beam_steps is not None
        src = torch.tensor([app.decoding.source.tokens])
        want = beam_steps(tiny_loaded.model, src, 3, 0.6, EXTRA_LEN)
        assert [c.tokens for c in app.beam_steps[0].candidates] == [c.tokens for c in want[0].candidates]
        view = app.query_one(BeamView)
        assert "beam step 1 of" in str(view.border_subtitle) and "beam 3" in str(view.border_title)
        text = text_of(view)
        assert "kept" in text and "pruned" in text
        await keys(pilot, "n")
        assert app.view.beam_index == 1 and len(app.decoding.steps) == 1  # n walks the beam, not the greedy steps
        await keys(pilot, "r")
        assert app.view.beam_index == len(app.beam_steps) - 1
        best = tiny_loaded.tokenizer.decode(app.beam_steps[-1].ranking[0].tokens)
        assert "re-ranking" in text_of(view) and best in text_of(view)
        await keys(pilot, "b")
        assert app.view.mode == "dist"

    drive(tiny_loaded, script, beam_size=3)


def test_explain_mode_reproduces_the_selected_weight(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "n", "n", "h", "h", "e")  # head 1, cross-attention, layer 0, step 2
        ex = app.explained[0]
        assert app.view.mode == "explain" and (ex.family, ex.layer, ex.head, ex.query_index) == ("cross", 0, 1, 2)
        torch.testing.assert_close(ex.weights, app.decoding.steps[2].cross[0][1], atol=1e-5, rtol=1e-4)
        assert "√d_k" in text_of(app.query_one("ExplainView"))
        heatmap = app.query_one(Heatmap)
        heatmap.focus()
        await keys(pilot, "up")  # a new cell: the explanation follows it
        assert app.explained[0].query_index == 1
        await keys(pilot, "f", "f", "l")  # encoder self-attention, layer 1
        assert app.explained[0].family == "encoder_self" and app.explained[0].layer == 1
        row = heatmap.cursor[0]
        torch.testing.assert_close(
            app.explained[0].weights, app.decoding.source.encoder_self[1][1, row], atol=1e-5, rtol=1e-4
        )

    drive(tiny_loaded, script)


def test_masks_positions_help_and_svg(tiny_loaded, tmp_path):
    async def script(app, pilot):
        await keys(pilot, "m")
        assert isinstance(app.screen, ViewsScreen)
        assert "look-ahead" in text_of(app.screen.query_one("MasksView"))
        positions = text_of(app.screen.query_one("PositionsView"))
        n = len(app.decoding.source.tokens)
        assert f"sinusoidal positional encoding · positions 0..{n - 1}" in positions
        assert positions.count("\n") >= n + 2  # a line per source position under the two headings
        await keys(pilot, "escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = " ".join(text_of(s) for s in app.screen.query("Static"))
        for binding in (*app.BINDINGS, *Heatmap.BINDINGS, *Distribution.BINDINGS):
            assert binding.tooltip and " ".join(binding.tooltip.split()[:4]) in " ".join(shown.split())
        await keys(pilot, "escape", "s")
        (svg,) = tmp_path.glob("tt-inspect-*.svg")
        assert svg.read_text().lstrip().startswith("<svg") and "source" in svg.read_text()

    drive(tiny_loaded, script, svg_dir=tmp_path)


def test_a_rendered_widget_renders_once_per_width_for_measure_and_draw():
    from rich.text import Text

    from tt_cli.tui.widgets.rendered import Rendered

    class Counted:
        renders = 0

        def __rich_console__(self, console, options):
            Counted.renders += 1
            yield Text("three\nshort\nlines")

    class One(App):
        def compose(self):
            yield Rendered()

    async def main() -> None:
        async with One().run_test(size=(40, 10)) as pilot:
            widget = pilot.app.query_one(Rendered)
            widget.update(Counted())
            await pilot.pause()
            widget.refresh(layout=True)  # measured again, same width: not rendered again
            await pilot.pause()
            assert widget.size.height == 3 and Counted.renders == 1
            assert pilot.app.export_screenshot().count("short") == 1
            await pilot.resize_terminal(30, 10)
            await pilot.pause()
            assert Counted.renders == 2

    asyncio.run(main())


@pytest.mark.parametrize("n", [1, 8, 24])
def test_a_mask_cell_draws_as_rich_draws_its_text_even_squeezed(n):
    """The masks view's cells stand in for Text("■ ") and Text("· "): the same segments at every
    width, where the grid fits and where rich squeezes its 2-wide columns (bench/bench_tui_toggle.py)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from tt_cli.tui.widgets.masks import HIDDEN, MAY_ATTEND

    def grid(cells) -> Table:
        table = Table(box=None, padding=(0, 0))
        table.add_column("", width=7, no_wrap=True)
        for j in range(n):
            table.add_column(str(j % 10), width=2)
        for i in range(n):
            table.add_row(f"row {i}", *[cells[(i + j) % 2] for j in range(n)])
        return table

    texts = (Text("■ ", style="green"), Text("· ", style="grey35"))
    console = Console(file=io.StringIO(), color_system="truecolor")
    for width in (5, 12, 20, 40, 60, 120):
        options = console.options.update(width=width)
        assert console.render_lines(grid((MAY_ATTEND, HIDDEN)), options) == console.render_lines(grid(texts), options)


def test_the_masks_screen_is_kept_and_redrawn_for_a_new_step(tiny_loaded):
    """Built once (bench/bench_tui_toggle.py): a new step redraws it, and each opening starts on the
    masks tab as a new screen did."""

    async def script(app, pilot):
        await keys(pilot, "m")
        screen = app.screen
        before = text_of(screen.query_one("MasksView"))
        screen.query_one("TabbedContent").active = "positions"
        await keys(pilot, "escape", "n", "m")
        assert app.screen is screen and screen.query_one("TabbedContent").active == "masks"
        after = text_of(screen.query_one("MasksView"))
        assert "0 1 " in before and "0 1 2" not in before and "0 1 2" in after  # one more decoder input

    drive(tiny_loaded, script)


def test_focus_changes_keep_the_footer_and_the_collector_is_unfrozen_after(tiny_loaded):
    """Hiding the focused candidates list (y) or a screen over the app changes the focus, not the
    keys the footer shows: its keys stay the same widgets (bench/bench_tui_toggle.py)."""

    async def script(app, pilot):
        assert gc.get_freeze_count() > 0  # the app's long-lived objects are left out of collections
        before = list(app.query("FooterKey"))
        assert app.focused is app.query_one(Distribution)
        await keys(pilot, "y")
        assert app.focused is None and app.view.mode == "lens"
        await keys(pilot, "question_mark", "escape", "y")
        assert list(app.query("FooterKey")) == before and [k.description for k in before][:3] == [
            "help",
            "quit",
            "step",
        ]

    drive(tiny_loaded, script)
    assert gc.get_freeze_count() == 0


def test_the_footer_is_rebuilt_when_the_focus_brings_other_keys():
    class Keyed(Static, can_focus=True):
        BINDINGS: ClassVar = [Binding("z", "zap", "zap")]

    class Two(App[None]):
        AUTO_FOCUS = None

        def compose(self):
            yield Static("plain", id="plain")
            yield Keyed("keyed", id="keyed")
            yield Footer()

    async def main() -> None:
        app = Two()
        async with app.run_test() as pilot:
            await pilot.pause()

            def shown() -> list[str]:
                return [k.description for k in app.query("FooterKey")]

            assert "zap" not in shown()
            app.query_one("#keyed").focus()
            await pilot.pause()
            assert "zap" in shown()
            app.set_focus(None)
            await pilot.pause()
            assert "zap" not in shown()

    asyncio.run(main())


def test_no_sentence_asks_for_one(tiny_loaded):
    async def script(app, pilot):
        assert isinstance(app.screen, AskScreen) and app.decoding is None
        await pilot.press(*"Il est médecin.")
        await keys(pilot, "enter")
        assert app.decoding is not None and app.decoding.source.text == "Il est médecin."
        assert len(app.decoding.steps) == 1

    drive(tiny_loaded, script, text=None)


# ------------------------------------------------------------------------------ the command
def test_cli_without_a_terminal_is_a_one_line_error(tiny_model_dir):
    runner = CliRunner()
    result = runner.invoke(cli, ["inspect", "--model", str(tiny_model_dir)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("tt: error: no sentence given and stdin is not a terminal")
    assert len(result.stderr.strip().splitlines()) == 1
    result = runner.invoke(cli, ["inspect", "  "])
    assert result.exit_code == 1 and "the sentence is empty" in result.stderr
    result = runner.invoke(cli, ["inspect", SENTENCE])
    assert result.exit_code == 1 and "needs a terminal" in result.stderr and "Traceback" not in result.stderr


# ------------------------------------------------------------------------------ the look
# Snapshots draw the committed fixed-weights model (tests/fixtures/make_tiny_model.py), not the one
# trained at test time: its numbers are the same on every CPU, so a failure means the look changed.
@pytest.fixture(scope="module")
def fixed_loaded():
    from core.checkpoint import load_model

    return load_model(FIXTURES / "tiny_model")


def test_the_fixed_model_still_translates_its_fixture(fixed_loaded):
    stepper = Stepper(fixed_loaded, SENTENCE)
    stepper.run()
    assert stepper.output_text == "I am a student."  # what the snapshots show; a re-made fixture must too


def test_snapshots_do_not_hang_on_float_rounding():
    """The explain scenario (the most numbers on screen) draws the same in float64 as in float32.

    Two CPUs differ in float32 rounding far less than float32 and float64 do, so a snapshot that
    survives this survives a move to another CPU.
    """
    from core.checkpoint import load_model

    screens = []
    for dtype in (torch.float32, torch.float64):
        loaded = load_model(FIXTURES / "tiny_model")
        loaded.model.to(dtype)

        async def script(app, pilot):
            await keys(pilot, "n", "n", "h", "e")
            screens.append(app.export_screenshot())

        drive(loaded, script)
    assert screens[0] == screens[1]


def snap(loaded, snap_compare, *names: str, size: tuple[int, int] = SIZE, **options) -> bool:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await keys(pilot, *names)

    return snap_compare(make_app(loaded, SENTENCE, **options), terminal_size=size, run_before=run_before)


def test_snapshot_decoded_sentence(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, "r")


def test_snapshot_explain_mode(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, "n", "n", "h", "e")


def test_snapshot_beam_mode_final_ranking(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, "b", "r", beam_size=3)


def test_snapshot_decoder_self_grid(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, "n", "n", "n", "f", "g")


def test_snapshot_at_80x24_the_footer_labels_and_panels_fit(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, "n", "n", size=(80, 24))


def test_snapshot_help_at_80x24_says_how_to_leave_and_scrolls(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, "question_mark", size=(80, 24))


def test_snapshot_help_lists_every_binding(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, "question_mark", size=(120, 50))  # tall enough for every key
