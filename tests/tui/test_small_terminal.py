"""`tt learn` and `tt inspect` in an 80×24 terminal (Pilot on the tiny real model): every map row and
live line reachable by keys, every key on the footer or behind `?`, the explain, masks and lens
panels readable at the width they get, steps counted as taken, and below a usable size a sentence
that says so instead of a broken screen."""

from __future__ import annotations

import asyncio
import io
import re

import torch
from rich.console import Console

from core.learn.lesson import live_matrix
from core.learn.steps import STEPS
from tests.tui.test_tui import drive, keys, settle
from tt_cli.tui.learn.app import make_learn_app
from tt_cli.tui.screens.help import HelpScreen
from tt_cli.tui.widgets.explain import ExplainView
from tt_cli.tui.widgets.footer import Footer
from tt_cli.tui.widgets.heatmap import Heatmap
from tt_cli.tui.widgets.lens import LensView
from tt_cli.tui.widgets.masks import MaskGrids
from tt_cli.tui.widgets.too_small import TooSmall

SMALL = (80, 24)
LONG = "L'accord sur la zone économique européenne a été signé en août 1992."


def drawn(renderable, width: int) -> list[str]:
    """What `renderable` shows at `width` columns, line by line (as the terminal would)."""
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


def widget_lines(widget) -> list[str]:
    return drawn(widget.content if hasattr(widget, "content") else widget.render(), widget.content_size.width)


def footer_keys(app) -> set[str]:
    return {key.description for key in app.screen.query_one(Footer).query("FooterKey")}


def lesson(loaded, script, start: int, size=SMALL) -> None:
    async def main() -> None:
        app = make_learn_app(loaded, start=start)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            while app.pending:
                await pilot.pause(0.05)
            await settle(pilot)
            await script(app, pilot)

    asyncio.run(main())


def first_step_with_a_map() -> int:
    return next(i for i, s in enumerate(STEPS, start=1) if s.key == "attention_table")


# ----------------------------------------------------------------------------------------- tt learn
def test_learn_at_80x24_reaches_every_map_row_and_live_line_by_keys(tiny_loaded):
    start = first_step_with_a_map()
    matrix = live_matrix(STEPS[start - 1], tiny_loaded)

    async def script(app, pilot):
        heatmap = app.query_one(Heatmap)
        rows = len(matrix.rows)
        assert heatmap.display and matrix.rows[-1] not in "\n".join(widget_lines(heatmap)[3:])  # cut: must scroll
        assert {"panel", "scroll", "next", "back", "keys", "quit"} <= footer_keys(app)
        assert "tab ←↑↓→" in widget_lines(heatmap)[-1]  # the map says how it scrolls
        live = app.query_one("#live")
        await keys(pilot, "tab", "tab")  # the lesson, then the live numbers
        assert app.focused is live
        if live.max_scroll_y:
            await keys(pilot, *["down"] * live.max_scroll_y)
            assert live.scroll_y == live.max_scroll_y  # the live panel's last line in view
        await keys(pilot, "tab")
        assert app.focused is heatmap and "cell" in footer_keys(app)
        await keys(pilot, *["down"] * rows)
        shown = widget_lines(heatmap)
        assert heatmap.cursor[0] == rows - 1 and any(
            line.strip().startswith(matrix.rows[-1].replace("▁", "·")) for line in shown
        )
        assert shown[-1].rstrip().endswith("←↑↓→") and f"–{rows}/{rows}" in shown[-1]
        index = app.index
        await keys(pilot, "n")  # n still steps while the map has the arrows
        assert app.index == index + 1

    lesson(tiny_loaded, script, start)


def test_learn_lists_every_key_in_one_keystroke(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        listed = " ".join(what for title, bindings in app.screen.sections for b in bindings for what in [b.tooltip])
        for binding in app.BINDINGS:
            assert binding.tooltip in listed
        await keys(pilot, "question_mark")
        assert not isinstance(app.screen, HelpScreen)

    lesson(tiny_loaded, script, 1)


def test_learn_below_a_usable_size_says_so(tiny_loaded):
    async def script(app, pilot):
        notice = app.query_one(TooSmall)
        assert notice.display and not app.query_one("#body").display
        assert "at least 60×18; this one is 50×15" in str(notice.render())
        await pilot.resize_terminal(*SMALL)
        await settle(pilot)
        assert not notice.display and app.query_one("#body").display

    lesson(tiny_loaded, script, 1, size=(50, 15))


# ----------------------------------------------------------------------------------------- tt inspect
def test_inspect_explain_numbers_are_whole_at_80x24(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "r", "h", "e")  # head 1, explain mode
        explain = app.query_one(ExplainView)
        ex = app.explanation if hasattr(app, "explanation") else None
        lines = widget_lines(explain)
        header = next(line for line in lines if line.lstrip().startswith("key"))
        assert all(name in header for name in ("q·k", "÷√d_k", "mask", "softmax"))
        rows = [line for line in lines if re.search(r"-?\d+\.\d{2} +-?\d+\.\d{3} +(✓|−∞) +\d\.\d{4}\s*$", line)]
        assert len(rows) >= 2, lines  # every key's q·k, q·k/√d_k and weight, none cut to "5.…"
        if ex is not None:
            assert f"{float(ex.weights[0]):.4f}" in rows[0]

    drive(tiny_loaded, script, size=SMALL)


def test_inspect_lens_panel_keeps_one_line_per_layer_at_80x24(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "n", "n", "y")
        lines = [line for line in widget_lines(app.query_one(LensView)) if line.strip()]
        assert len(lines) == 1 + tiny_loaded.cfg.n_decoder_layers, lines  # a header and one line a layer
        assert [line.split()[0] for line in lines[1:]] == [str(i + 1) for i in range(tiny_loaded.cfg.n_decoder_layers)]

    drive(tiny_loaded, script, size=SMALL)


def test_inspect_counts_the_steps_taken_not_the_length_limit(tiny_loaded):
    async def script(app, pilot):
        await keys(pilot, "n", "n")
        text = " ".join(widget_lines(app.query_one("SentenceView")))
        assert f"step 3 · limit {app.decoding.limit}" in text and f"of {app.decoding.limit}" not in text

    drive(tiny_loaded, script, size=SMALL)


def test_inspect_below_a_usable_size_says_so(tiny_loaded):
    async def script(app, pilot):
        notice = app.query_one(TooSmall)
        assert notice.display and not app.query_one("#main").display
        assert "tt inspect needs a terminal of at least" in str(notice.render())
        assert "quit" in footer_keys(app)  # q still shows
        await pilot.resize_terminal(*SMALL)
        await settle(pilot)
        assert not notice.display and app.query_one("#main").display

    drive(tiny_loaded, script, size=(60, 18))


def test_masks_header_sits_over_its_cells_at_every_width():
    n = 23
    ahead = torch.tril(torch.ones(n, n, dtype=torch.bool))
    pieces = [f"p{i}" for i in range(n)]
    for width in (80, 60, 200):
        lines = drawn(MaskGrids([("a", ahead, pieces), ("b", ahead, pieces), ("c", ahead, pieces)]), width)
        assert max(len(line) for line in lines) <= width
        positions = "".join(str(j % 10) for j in range(n))
        wide, narrow = " ".join(positions), positions  # 2 columns a key, or 1
        units = next(i for i, line in enumerate(lines) if wide in line or narrow in line)
        header, tens, first, last = lines[units], lines[units - 1], lines[units + 1], lines[units + n]
        cell = 2 if wide in header else 1
        starts = [m.start() for m in re.finditer(re.escape(wide if cell == 2 else narrow), header)]
        assert starts  # every grid's positions 0..n-1, in order, one per cell
        for start in starts:
            assert tens[start + 10 * cell] == "1" and tens[start + 20 * cell] == "2"
            assert first[start] == "■" and first[start + cell] == "·"  # row 0 attends to key 0 only
            assert last[start : start + cell * n : cell] == "■" * n  # the last row to every key
