"""`tt learn` in the terminal UI: Pilot walks the lesson on the tiny real model; snapshots per kind of view."""

from __future__ import annotations

import asyncio

import pytest
import torch
from textual.widgets import TabbedContent

from core.learn.lesson import live_matrix, live_numbers
from core.learn.steps import STEPS, step
from tests.conftest import FIXTURES
from tests.tui.test_tui import settle, text_of
from tt_cli.tui.learn.app import make_learn_app
from tt_cli.tui.learn.inspect_step import inspect_app_for
from tt_cli.tui.learn.steps_screen import StepsScreen
from tt_cli.tui.screens.views import ViewsScreen
from tt_cli.tui.views.screen import InsidesScreen, open_insides
from tt_cli.tui.widgets.heatmap import Heatmap

SIZE = (120, 40)


def run(app, script) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await script(app, pilot)

    asyncio.run(main())


async def press(pilot, *names: str) -> None:
    for name in names:
        await pilot.press(name)
        await settle(pilot)


def shown(app, selector: str) -> str:
    return text_of(app.query_one(selector))


def other_shape(tiny_loaded, **overrides):
    """A model of another shape with the tiny model's tokenizer (random weights: the views must still run)."""
    from core.checkpoint import LoadedModel
    from core.model.config import preset
    from core.model.transformer import Transformer

    torch.manual_seed(0)
    cfg = preset("tiny", vocab_size=tiny_loaded.cfg.vocab_size, **overrides)
    return LoadedModel(Transformer(cfg).eval(), tiny_loaded.tokenizer, tiny_loaded.path, {})


def check_step_on_screen(app, loaded, index: int) -> None:
    s = STEPS[index]
    assert shown(app, "#progress").startswith(f"Step {index + 1}/{len(STEPS)} · {s.title}")
    assert s.formula in shown(app, "#lesson-text")
    live = "".join(shown(app, "#live-numbers").split())  # a long value wraps in the panel
    for label, value in live_numbers(s, loaded):  # the model's numbers, as core computes them
        assert "".join(value.split()) in live, (s.key, label)
    heatmap = app.query_one(Heatmap)
    assert heatmap.display == (s.matrix is not None), s.key
    if heatmap.display:
        matrix = live_matrix(s, loaded)
        assert heatmap.data.matrix == matrix.weights and heatmap.data.rows == matrix.rows


@pytest.mark.parametrize("shape", ["tiny", "3+1 layers", "pre-norm, 2 heads"])
def test_walks_from_the_first_step_to_the_last_and_back(tiny_loaded, shape):
    loaded = {
        "tiny": lambda: tiny_loaded,
        "3+1 layers": lambda: other_shape(tiny_loaded, n_encoder_layers=3, n_decoder_layers=1),
        "pre-norm, 2 heads": lambda: other_shape(tiny_loaded, norm="pre", h=2),
    }[shape]()

    async def script(app, pilot):
        for index in range(len(STEPS)):
            assert app.index == index
            check_step_on_screen(app, loaded, index)
            await press(pilot, "n")
        assert app.index == len(STEPS) - 1  # past the last step it stays there
        await press(pilot, "p", "left")
        assert app.index == len(STEPS) - 3
        await press(pilot, "right")
        check_step_on_screen(app, loaded, len(STEPS) - 2)

    run(make_learn_app(loaded), script)


def test_jump_to_a_step_from_the_list(tiny_loaded):
    async def script(app, pilot):
        await press(pilot, "l")
        assert isinstance(app.screen, StepsScreen)
        await press(pilot, *["down"] * 7, "enter")
        assert not isinstance(app.screen, StepsScreen) and app.index == 7
        check_step_on_screen(app, tiny_loaded, 7)
        await press(pilot, "l", "escape")  # back without jumping
        assert app.index == 7

    run(make_learn_app(tiny_loaded), script)


def test_the_lesson_text_scrolls_with_the_arrows(tiny_loaded):
    async def script(app, pilot):
        lesson = app.query_one("#lesson")
        assert lesson.max_scroll_y > 0 and lesson.scroll_y == 0  # step 16 is longer than the panel
        await press(pilot, "down", "down", "up")
        assert lesson.scroll_y == min(6, lesson.max_scroll_y) - 3
        await press(pilot, "j")
        assert lesson.scroll_y == min(lesson.scroll_y, lesson.max_scroll_y) > 0
        await press(pilot, "n", "p")  # a new step starts at its top
        assert lesson.scroll_y == 0

    run(make_learn_app(tiny_loaded, start=16), script)


def test_start_at_a_step_and_leave_into_inspect(tiny_loaded):
    async def script(app, pilot):
        check_step_on_screen(app, tiny_loaded, 5)
        await press(pilot, "n", "i")

    app = make_learn_app(tiny_loaded, start=6)
    run(app, script)
    assert app.return_value == STEPS[6].key
    with pytest.raises(ValueError, match="1 to 24"):
        make_learn_app(tiny_loaded, start=25)


def test_every_view_of_the_lesson_opens_in_inspect():
    """Each step's opening names inspect's own modes and insides tabs (a misspelt family fails in core)."""
    from typing import get_args

    from tt_cli.tui.state import Mode
    from tt_cli.tui.views.panels import PANELS

    for s in STEPS:
        assert s.opens.mode is None or s.opens.mode in set(get_args(Mode)) - {"dist", "ref"}, s.key
        assert s.opens.insides is None or s.opens.insides in PANELS, s.key


def opened(loaded, key: str, select=None) -> dict:
    """tt inspect as the lesson opens it on step `key`: what it shows once settled."""
    seen = {}

    async def script(app, pilot):
        await settle(pilot)
        screen = app.screen
        tab = screen.query_one(TabbedContent).active if isinstance(screen, InsidesScreen) else None
        seen.update(view=app.view, screen=screen, decoding=app.decoding, compared=app.compared, text=app.text, tab=tab)

    run(inspect_app_for(loaded, step(key), select=select), script)
    return seen


@pytest.mark.parametrize("key", ["coreference", "masks", "cross_attention"])
def test_inspect_opens_on_the_layer_and_head_the_step_showed(tiny_loaded, key):
    shown = {}

    async def script(app, pilot):
        while app.pending:
            await pilot.pause(0.05)
        shown["matrix"] = app.selection

    run(make_learn_app(tiny_loaded, start=STEPS.index(step(key)) + 1), script)
    matrix = shown["matrix"]
    assert matrix is not None and matrix == live_matrix(step(key), tiny_loaded)
    view = opened(tiny_loaded, key, select=matrix)["view"]
    assert (view.family, view.layer, view.head) == (matrix.family, matrix.layer, matrix.head)
    assert (view.layer, view.head) != (0, None) or key == "coreference"  # not inspect's default view


@pytest.mark.parametrize(
    "key, expect",
    [
        ("alignment", lambda s: s["view"].family == "cross" and s["view"].mode == "dist"),
        ("attention_table", lambda s: s["view"].family == "encoder_self" and s["view"].grid),
        ("coreference", lambda s: s["view"].family == "encoder_self" and not s["view"].grid),
        ("the_cat_sat", lambda s: s["view"].mode == "explain"),
        ("masks", lambda s: isinstance(s["screen"], ViewsScreen)),
        ("training", lambda s: s["view"].mode == "ref" and s["compared"] is not None),
        ("beam", lambda s: s["view"].mode == "beam"),
        ("add_norm", lambda s: isinstance(s["screen"], InsidesScreen) and s["tab"] == "add_norm"),
        ("contextual", lambda s: isinstance(s["screen"], InsidesScreen) and s["tab"] == "contextual"),
    ],
)
def test_inspect_opens_on_the_steps_view(tiny_loaded, key, expect):
    seen = opened(tiny_loaded, key)
    assert expect(seen), (key, seen["view"])
    assert seen["text"] == step(key).source
    assert seen["decoding"].active.finished  # decoded to the end first


# ------------------------------------------------------------------------------------ snapshots
@pytest.fixture(scope="module")
def fixed_loaded():
    from core.checkpoint import load_model

    return load_model(FIXTURES / "tiny_model")


def snap(loaded, snap_compare, start: int, *names: str, size: tuple[int, int] = SIZE) -> bool:
    async def run_before(pilot) -> None:
        await settle(pilot)
        for name in names:
            await pilot.press(name)
            await settle(pilot)

    return snap_compare(make_learn_app(loaded, start=start), terminal_size=size, run_before=run_before)


def test_snapshot_a_step_with_its_attention_table(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, 16)  # masks


def test_snapshot_a_step_with_its_attention_table_at_80x24(fixed_loaded, snap_compare):
    # tab to the table, two rows down: the lit border, the footer's keys and the table's scroll note
    assert snap(fixed_loaded, snap_compare, 16, "tab", "tab", "tab", "down", "down", size=(80, 24))


def test_snapshot_a_step_told_in_numbers(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, 12)  # Add & Norm


def test_snapshot_the_list_of_steps(fixed_loaded, snap_compare):
    assert snap(fixed_loaded, snap_compare, 1, "l")


def test_snapshots_do_not_hang_on_float_rounding():
    """The snapshotted screens (the lesson's three, the insides' Add & Norm) draw the same in float64
    as in float32: two CPUs differ in float32 rounding far less, so the snapshots survive a move."""
    from core.checkpoint import load_model
    from tt_cli.tui.app import make_app

    async def shot(app, insides: bool = False) -> str:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            if insides:
                open_insides(app, tab="add_norm")
                await settle(pilot)
            # Two captures alike, 50 ms apart: on a loaded machine the screen can still be drawing
            # (the insides' tab switch is queued after a refresh) when the model thread is idle.
            last = app.export_screenshot()
            for _ in range(100):
                await pilot.pause(0.05)
                now = app.export_screenshot()
                if now == last:
                    return now
                last = now
            raise AssertionError("the screen kept changing")

    screens = []
    for dtype in (torch.float32, torch.float64):
        loaded = load_model(FIXTURES / "tiny_model")
        loaded.model.to(dtype)
        learn = [asyncio.run(shot(make_learn_app(loaded, start=s))) for s in (12, 16)]
        insides = asyncio.run(shot(make_app(loaded, "Je suis étudiant."), insides=True))
        screens.append([*learn, insides])
    assert screens[0] == screens[1]
