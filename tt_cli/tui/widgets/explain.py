"""Explain mode: Eq. 1 for the selected query and head, every number from the live model.

softmax(q·kᵀ / √d_k) · V, one row per key: the raw dot product, the scaled score, the mask,
the weight; then the weighted sum of the values. The same steps as the notes' "The cat sat".
"""

from __future__ import annotations

import math

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from core.analysis.explain import Explanation
from tt_cli.tui.widgets.distribution import bar
from tt_cli.tui.widgets.heatmap import label

FAMILY_NAMES = {
    "cross": "cross-attention",
    "decoder_self": "masked decoder self-attention",
    "encoder_self": "encoder self-attention",
}


def vector(v, n: int = 6) -> str:
    values = [f"{x:+.2f}" for x in v.tolist()[:n]]
    return "[" + " ".join(values) + (" …]" if v.numel() > n else "]")


class ExplainView(Static):
    DEFAULT_CSS = """
    ExplainView { height: 1fr; overflow-y: auto; }
    """

    def show(self, ex: Explanation | None, note: str = "", key: int | None = None) -> None:
        self.border_title = "explain: softmax(q·kᵀ/√d_k)·V"
        if ex is None:
            self.update(Text(note or "select a cell in the heatmap", style="dim italic"))
            return
        self.border_subtitle = f"layer {ex.layer + 1} · head {ex.head + 1}"
        head = Text()
        head.append(f"{FAMILY_NAMES.get(ex.family, ex.family)}\n", style="bold")
        head.append(f"query {label(ex.query_piece, 12)} (position {ex.query_index})", style="bold yellow")
        if note:
            head.append(f"  {note}", style="dim")
        head.append(f"\nq = x·W^Q  {vector(ex.query)}\n")
        head.append(f"d_k = {ex.d_k}, so every q·k is divided by √d_k = {math.sqrt(ex.d_k):.3f}", style="cyan")
        tail = Text()
        tail.append(f"Σ softmax = {float(ex.weights.sum()):.4f}\n", style="dim")
        tail.append(f"output = Σ softmax·v = {vector(ex.output)}\n")
        tail.append("this head's slice of the sub-layer output, before W^O mixes the heads", style="dim")
        self.update(Group(head, KeyTable(ex, key), tail))


class KeyTable:
    """One row per key: q·k, ÷√d_k, the mask, the softmax weight, and a bar where there is room. Laid
    out at the width it is drawn in, so that at 80×24 (a 34-column panel) every number stays whole."""

    WIDE = 44  # columns from which the bar and the longer labels fit

    def __init__(self, ex: Explanation, key: int | None) -> None:
        self.ex, self.key = ex, key

    def __rich_console__(self, console, options):
        ex, wide = self.ex, options.max_width >= self.WIDE
        table = Table(box=None, padding=(0, 1), header_style="bold", collapse_padding=True, pad_edge=False)
        for name in ("key", "q·k", "÷√d_k", "mask", "softmax", *([""] if wide else [])):
            table.add_column(name, justify="left" if name in ("key", "") else "right", no_wrap=True)
        best = int(ex.weights.argmax())
        pieces = ex.key_pieces or [str(i) for i in range(ex.keys.size(0))]
        for j, piece in enumerate(pieces):
            allowed = bool(ex.mask[j])
            style = "bold green" if j == best else ("grey42" if not allowed else "")
            if j == self.key:
                style += " reverse"  # the heatmap's selected cell
            table.add_row(
                Text(label(piece, 10 if wide else 7), style=style),
                f"{ex.scores[j]:.3f}" if wide else f"{ex.scores[j]:.2f}",
                f"{ex.scaled[j]:.3f}",
                Text("✓", style="green") if allowed else Text("−∞", style="red"),
                f"{ex.weights[j]:.4f}",
                *([Text(bar(float(ex.weights[j]), 8), style="cyan")] if wide else []),
            )
        yield table
