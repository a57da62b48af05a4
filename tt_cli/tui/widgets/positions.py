"""The positional encodings added to the embeddings (§3.5): one row per position, one column per
dimension; sinusoidal waves whose wavelength grows along d_model (or the learned table)."""

from __future__ import annotations

import torch
from rich.console import Group
from rich.text import Text

from tt_cli.tui.widgets.heatmap import label
from tt_cli.tui.widgets.rendered import Rendered

# Blue for negative, red for positive: a sine wave reads as alternating bands.
_NEG = ["grey11", "navy_blue", "blue3", "dodger_blue2"]
_POS = ["grey11", "dark_red", "red3", "orange_red1"]


def diverging(value: float) -> str:
    scale = _POS if value >= 0 else _NEG
    return scale[min(int(abs(value) * len(scale)), len(scale) - 1)]


class PositionsView(Rendered):
    DEFAULT_CSS = """
    PositionsView { height: auto; }
    """

    def show(self, table: torch.Tensor, kind: str, pieces: list[str], max_dims: int = 96) -> None:
        """table (S, d_model): the encoding of each source position; kind: sinusoidal or learned."""
        n = len(pieces)
        dims = min(table.size(1), max_dims)
        lines = [
            Text(
                f"{kind} positional encoding · positions 0..{n - 1} (rows) × dimensions 0..{dims - 1} (columns)",
                style="bold",
            ),
            Text("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(…): blue < 0 < red", style="dim"),
        ]
        for pos in range(n):
            line = Text(f"{pos:>3} {label(pieces[pos], 8):<8} ")
            for value in table[pos, :dims].tolist():
                line.append(" ", style=f"on {diverging(value)}")
            lines.append(line)
        self.update(Group(*lines))
