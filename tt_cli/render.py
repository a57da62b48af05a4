"""Rich renderings shared by commands (and the TUI): the attention heatmap.

Reads only core's dataclasses and plain tensors; imports rich, never typer or textual.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from core.decode.trace import piece_label

# Light to dark: a weight of 0 is the terminal's own background, 1 the strongest colour.
_SHADES = ["grey11", "grey23", "dark_blue", "blue3", "dodger_blue2", "deep_sky_blue1", "cyan1", "bright_white"]


def shade(weight: float) -> str:
    """The background colour for an attention weight in [0, 1]."""
    w = min(max(weight, 0.0), 1.0)
    return _SHADES[min(int(w * len(_SHADES)), len(_SHADES) - 1)]


def heatmap(
    matrix: Sequence[Sequence[float]],
    source_pieces: Sequence[str],
    target_pieces: Sequence[str],
    *,
    title: str = "",
    show_values: bool = False,
    width: int | None = None,
) -> Table:
    """A table with source pieces across and output pieces down; each cell's colour is the
    attention weight that output piece gave that source piece (rows sum to 1).

    `matrix` is (T_out, S), e.g. core.decode.trace.attention_matrix(source, steps, "cross", layer, head).tolist().
    show_values: each cell also prints its weight (.42), so the map reads without colour.
    width: the columns the terminal has; source columns past it are left out and the caption
    says how many, rather than the terminal clipping them unannounced.
    """
    table = Table(title=title or None, show_header=True, header_style="bold", box=None, pad_edge=False, padding=(0, 1))
    table.add_column("", justify="right", style="bold", no_wrap=True)
    labels = [piece_label(label) for label in target_pieces]
    heads = [piece_label(piece, 6) for piece in source_pieces]
    shown = len(heads) if width is None else _columns_that_fit(heads, max(map(len, labels), default=0), width)
    for head in heads[:shown]:
        # Vertical-ish headers would be nicer; short clipped labels keep wide sentences on screen.
        table.add_column(head, justify="center", no_wrap=True, min_width=3)
    for t, row in enumerate(matrix):
        cells = []
        for weight in row[:shown]:
            value = f"{weight:.2f}"[1:] if show_values and weight < 1 else ("1.0" if show_values else "  ")
            cells.append(Text(value, style=f"on {shade(float(weight))}"))
        table.add_row(labels[t] if t < len(labels) else "", *cells)
    if shown < len(heads):
        table.caption = f"{len(heads) - shown} of {len(heads)} source columns cut to fit {width} columns"
    return table


def _columns_that_fit(heads: Sequence[str], label_width: int, width: int) -> int:
    """How many source columns fit beside the row labels: each is its header or 3 wide, plus a
    space either side (the table's padding, none at its edges)."""
    used, shown = label_width + 1, 0
    for head in heads:
        used += max(len(head), 3) + 2
        if used - 1 > width:
            break
        shown += 1
    return shown


def legend(colour: bool = True) -> Text:
    """A one-line scale from 0 to 1 for the heatmap's colours (without colour: what the numbers are)."""
    if not colour:
        return Text("each cell: the attention weight (.42 = 0.42) the output piece gave that source piece")
    text = Text("0 ")
    for s in _SHADES:
        text.append("  ", style=f"on {s}")
    text.append(" 1")
    return text
