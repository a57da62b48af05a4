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
    cell (and crops, as it does the Text's, in a column squeezed to one), without Text's wrapping per
    cell. A grid is n × n cells, and with Text they took ~3/5 of the view's render (bench/bench_tui_toggle.py)."""

    def __init__(self, glyph: str, style: str) -> None:
        self.segment = Segment(glyph + " ", Style.parse(style))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.segment


MAY_ATTEND, HIDDEN = Cell("■", "green"), Cell("·", "grey35")


def mask_grid(title: str, mask: torch.Tensor, rows: list[str], cols: list[str]) -> Table:
    """mask (T_q, T_k) bool: ■ may attend, · hidden."""
    table = Table(title=title, box=None, padding=(0, 0), show_header=True, header_style="bold", title_style="bold")
    table.add_column("", width=7, no_wrap=True)
    for j, _ in enumerate(cols):
        table.add_column(str(j % 10), width=2)  # positions: pieces would not fit 2 columns
    for i, r in enumerate(rows):
        cells = [MAY_ATTEND if m else HIDDEN for m in mask[i].tolist()]
        table.add_row(label(r, 7), *cells)
    return table


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
        grids = Table.grid(padding=(0, 3))
        grids.add_row(
            mask_grid("padding (short copy)", pad[1, 0].expand(n, n), short_rows, short_rows),
            mask_grid("look-ahead", ahead[0, 0], tgt_pieces, tgt_pieces),
            mask_grid("combined (short copy)", both[1, 0], short_rows, short_rows),
        )
        self.update(Group(intro, grids))
