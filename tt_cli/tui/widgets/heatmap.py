"""The attention heatmap: queries down, keys across, one coloured cell per weight; a movable cursor.

The widget only draws what it is given (a `HeatmapData`); the app decides which family, layer and
head. Arrow keys or a mouse click select a cell; the selection is posted as `Heatmap.CellSelected`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Group
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from core.decode.trace import piece_label as label
from tt_cli.render import shade

LABEL_WIDTH = 10
MIN_CELL = 4  # columns a key takes at least: a long sentence scrolls rather than squeeze its labels


def nth(index: int, count: int) -> str:
    """ "3 of 12" for index 2: steps, layers, heads and checkpoints count from 1 on every screen of
    tt inspect, as in all of tt's output and options (core.model.attention.layer_head); positions stay
    the paper's 0-based pos."""
    return f"{index + 1} of {count}"


# One tooltip for the four arrows: the help screen lists them on one row.
_MOVE = "with the heatmap focused (tab, or a click on a cell): move the selected cell"


@dataclass
class HeatmapData:
    title: str
    rows: list[str]  # one label per query
    cols: list[str]  # one label per key
    matrix: list[list[float]]  # (rows, cols) weights in [0, 1]
    hidden: list[list[bool]] = field(default_factory=list)  # True where a mask forbade attending
    current_row: int | None = None  # the row of the step being looked at
    marks: list[list[bool]] = field(default_factory=list)  # when given, drawn instead of the weights
    row_marks: list[str] = field(default_factory=list)  # one character per row beside its label (a head's kind)


class Heatmap(Widget, can_focus=True):
    DEFAULT_CSS = """
    Heatmap { height: 1fr; padding: 0 1; }
    """
    BINDINGS = [
        Binding("up", "move(-1, 0)", "cell ↑", show=False, tooltip=_MOVE),
        Binding("down", "move(1, 0)", "cell ↓", show=False, tooltip=_MOVE),
        Binding("left", "move(0, -1)", "cell ←", show=False, tooltip=_MOVE),
        Binding("right", "move(0, 1)", "cell →", show=False, tooltip=_MOVE),
    ]

    class CellSelected(Message):
        def __init__(self, row: int, col: int) -> None:
            super().__init__()
            self.row, self.col = row, col

    cursor: reactive[tuple[int, int]] = reactive((0, 0))

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data = HeatmapData("", [], [], [])

    def show(self, data: HeatmapData, *, follow: bool = True) -> None:
        """Draw new data; with `follow`, the cursor moves to the current row (keeping its column)
        when the picture changed (a step, another family/layer/head), never on a mere redraw."""
        changed = len(data.rows) != len(self.data.rows) or data.title != self.data.title
        self.data = data
        row, col = self.cursor
        if follow and changed and data.current_row is not None:
            row = data.current_row
        self.set_cursor(row, col)
        self.refresh()

    def set_cursor(self, row: int, col: int) -> None:
        n_rows, n_cols = len(self.data.rows), len(self.data.cols)
        row = min(max(row, 0), max(n_rows - 1, 0))
        col = min(max(col, 0), max(n_cols - 1, 0))
        self.cursor = (row, col)
        if n_rows and n_cols:
            self.post_message(self.CellSelected(row, col))

    def action_move(self, d_row: int, d_col: int) -> None:
        self.set_cursor(self.cursor[0] + d_row, self.cursor[1] + d_col)

    def watch_cursor(self) -> None:
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()  # the "more" note says which keys scroll now

    def on_blur(self) -> None:
        self.refresh()

    def _cell_width(self) -> int:
        n_cols = max(len(self.data.cols), 1)
        room = max(self.content_size.width - LABEL_WIDTH - 1, MIN_CELL)
        return max(MIN_CELL, min(7, room // n_cols))

    def _title_lines(self) -> int:
        """The title wraps (a grid's query and notes are worth reading); the window counts its lines."""
        return len(Text(self.data.title).wrap(self.app.console, max(self.content_size.width, 1)))

    def _header_lines(self, width: int) -> int:
        """1 when every key label fits its cell, else 2: staggered, each label gets two cells' room."""
        return 1 if all(len(label(piece, 99)) <= width - 1 for piece in self.data.cols) else 2

    def _header(self, cols: range, width: int) -> list[Text]:
        """The key labels over the columns; on two lines, even columns above and odd ones below."""
        n_lines = self._header_lines(width)
        if n_lines == 1:
            header = Text(" " * (LABEL_WIDTH + 1))
            for j in cols:
                style = "bold reverse" if j == self.cursor[1] else "bold"
                header.append(label(self.data.cols[j], width - 1).ljust(width), style=style)
            return [header]
        lines = []
        for line_no in range(n_lines):
            line, x = Text(" " * (LABEL_WIDTH + 1)), 0
            for k, j in enumerate(cols):
                if k % n_lines == line_no:
                    text = label(self.data.cols[j], n_lines * width - 1)
                    line.append(" " * (k * width - x))
                    line.append(text, style="bold reverse" if j == self.cursor[1] else "bold")
                    x = k * width + cell_len(text)
            lines.append(line)
        return lines

    def _window(self) -> tuple[range, range]:
        """The rows and columns that fit, scrolled so that the cursor (and its row) stay in view."""

        def around(cursor: int, total: int, fits: int) -> range:
            fits = max(fits, 1)
            first = min(max(cursor - fits // 2, 0), max(total - fits, 0))
            return range(first, min(first + fits, total))

        width = self._cell_width()
        fit_cols = (self.content_size.width - LABEL_WIDTH - 1) // width
        # the title, the key labels, and a line for the "more" note
        fit_rows = self.content_size.height - 1 - self._title_lines() - self._header_lines(width)
        return (
            around(self.cursor[0], len(self.data.rows), fit_rows),
            around(self.cursor[1], len(self.data.cols), fit_cols),
        )

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self.data.rows:
            return
        rows, cols = self._window()
        row = rows.start + offset.y - self._title_lines() - self._header_lines(self._cell_width())
        col = cols.start + (offset.x - LABEL_WIDTH - 1) // self._cell_width()
        if offset.x > LABEL_WIDTH and row in rows and col in cols:
            self.focus()
            self.set_cursor(row, col)

    def render(self) -> Group:
        data = self.data
        lines = [Text(data.title, style="bold")]
        if not data.rows or not data.cols:
            lines.append(Text("nothing decoded yet: press n to take a step", style="dim italic"))
            return Group(*lines)
        width = self._cell_width()
        rows, cols = self._window()
        lines.extend(self._header(cols, width))
        for i in rows:
            marker, marker_style = ("▶" if i == data.current_row else " "), "bold yellow"
            if i != data.current_row and data.row_marks:  # the ▶ column is free: the row's own mark
                marker, marker_style = data.row_marks[i], "bold cyan"
            row_style = "bold reverse" if i == self.cursor[0] else ("bold" if i == data.current_row else "")
            line = Text()  # Text(style=…) would style the whole line: append each part with its own
            line.append(f"{label(data.rows[i], LABEL_WIDTH - 1):>{LABEL_WIDTH - 1}}", style=row_style)
            line.append(marker, style=marker_style)
            line.append(" ")
            for j in cols:
                w = data.matrix[i][j]
                hidden = bool(data.hidden and data.hidden[i][j])
                if (i, j) == self.cursor:
                    # ".53" rather than "0.53": the value fits a 3-wide cell.
                    value = f"{w:.2f}".lstrip("0") if w < 0.995 else "1.0"
                    line.append(value.center(width), style="bold black on yellow")
                elif hidden:
                    line.append("·".center(width), style="grey35")
                elif data.marks:
                    line.append(
                        ("●" if data.marks[i][j] else "·").center(width),
                        style="bold green" if data.marks[i][j] else "grey35",
                    )
                else:
                    line.append(" " * width, style=f"on {shade(w)}")
            lines.append(line)
        if len(rows) < len(data.rows) or len(cols) < len(data.cols):
            lines.append(
                Text(
                    # short enough for a 36-column panel (80×24): how to scroll, whether focused or not
                    f"rows {rows.start + 1}–{rows.stop}/{len(data.rows)}, keys {cols.start + 1}–{cols.stop}"
                    f"/{len(data.cols)} · " + ("←↑↓→" if self.has_focus else "tab ←↑↓→"),
                    style="dim",
                    no_wrap=True,
                    overflow="ellipsis",
                )
            )
        return Group(*lines)
