"""The masks of core/masks.py drawn for the sentence on screen: padding, look-ahead, combined.

A batch of two (this sentence and a shorter copy) shows why padding masks exist at all.
"""

from __future__ import annotations

import torch
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from core.model.masks import combine, padding_mask, subsequent_mask
from tt_cli.tui.widgets.heatmap import label
from tt_cli.tui.widgets.rendered import Rendered


class Cell:
    """One mask cell, a glyph and a space: the segment rich draws for Text(glyph + " ") in a table
    cell (and crops, as it does the Text's, in a column one wide), without Text's wrapping per
    cell. A grid is n × n cells, and with Text they took ~3/5 of the view's render (bench/bench_tui_toggle.py)."""

    def __init__(self, glyph: str, style: str) -> None:
        self.segment = Segment(glyph + " ", Style.parse(style))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.segment


MAY_ATTEND, HIDDEN = Cell("■", "green"), Cell("·", "grey35")
ROW_LABEL = 7  # columns of a grid's row labels
GAP = 3  # columns between two grids side by side


def mask_grid(title: str, mask: torch.Tensor, rows: list[str], cell: int = 2) -> Table:
    """mask (T_q, T_k) bool: ■ may attend, · hidden; each key `cell` columns wide (1 or 2), headed by
    its position: the units digit, with the tens digit on a line above once there are ten or more."""
    n = mask.size(1)
    table = Table(title=title, box=None, padding=(0, 0), show_header=True, header_style="bold", title_style="bold")
    table.add_column("", width=ROW_LABEL, no_wrap=True)
    for j in range(n):  # positions: pieces would not fit the cells
        tens = "" if n <= 10 else f"{j // 10}\n" if j >= 10 else " \n"
        table.add_column(f"{tens}{j % 10}", width=cell, no_wrap=True)
    for i, r in enumerate(rows):
        table.add_row(label(r, ROW_LABEL - 1), *(MAY_ATTEND if m else HIDDEN for m in mask[i].tolist()))
    return table


class MaskGrids:
    """The three grids at the width they are drawn in: side by side when they fit, else one under the
    other, and each key one column wide when two do not fit (the header stays over its cells)."""

    def __init__(self, grids: list[tuple[str, torch.Tensor, list[str]]]) -> None:
        self.grids = grids

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        n = max(mask.size(1) for _, mask, _ in self.grids)
        width = options.max_width
        cell = 2 if ROW_LABEL + 2 * n <= width else 1
        per_row = max(1, min(len(self.grids), (width + GAP) // (ROW_LABEL + cell * n + GAP)))
        for start in range(0, len(self.grids), per_row):
            row = Table.grid(padding=(0, GAP))
            row.add_row(*(mask_grid(t, m, r, cell) for t, m, r in self.grids[start : start + per_row]))
            yield row


class MasksView(Rendered):
    DEFAULT_CSS = """
    MasksView { height: auto; }
    """

    def show(self, tgt_pieces: list[str], tgt_ids: list[int], pad_id: int) -> None:
        # A second, shorter sentence in the same batch is padded to this one's length.
        n = len(tgt_ids)
        short = max(1, n // 2)
        batch = torch.tensor([tgt_ids, tgt_ids[:short] + [pad_id] * (n - short)])  # (2, T)
        pad = padding_mask(batch, pad_id)  # (2, 1, 1, T)
        ahead = subsequent_mask(n)  # (1, 1, T, T)
        both = combine(pad, ahead)  # (2, 1, T, T)
        short_rows = tgt_pieces[:short] + ["<pad>"] * (n - short)
        intro = Text(
            "True (■) = the query (row) may attend to the key (column). Decoder inputs of this sentence, "
            f"and a copy cut to {short} pieces and padded, as in a batch.\n",
            style="dim",
        )
        grids = MaskGrids(
            [
                ("padding (short copy)", pad[1, 0].expand(n, n), short_rows),
                ("look-ahead", ahead[0, 0], tgt_pieces),
                ("combined (short copy)", both[1, 0], short_rows),
            ]
        )
        self.update(Group(intro, grids))
