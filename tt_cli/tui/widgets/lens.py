"""The logit lens panel: for the current step, the pieces each decoder layer would already output.

Each layer's output goes through the final layer norm and the generator (core/analysis/lens.py);
the last row is the model's own prediction. The chosen piece's rank per layer says where it forms.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from core.analysis.lens import LensStep
from tt_cli.tui.widgets.heatmap import label


class LensView(Static):
    DEFAULT_CSS = """
    LensView { height: 1fr; overflow-y: auto; }
    """

    def show(self, step: LensStep | None) -> None:
        self.border_title = "logit lens: top pieces per decoder layer"
        if step is None:
            self.update(Text("computing the logit lens…", style="dim italic"))
            return
        self.border_subtitle = f"step {step.index + 1} → {label(step.piece, 12)}"
        table = Table(box=None, padding=(0, 1), show_edge=False)
        table.add_column("layer", justify="right", no_wrap=True, min_width=5)
        table.add_column("rank", justify="right", no_wrap=True, min_width=4)
        table.add_column("top pieces (p)", no_wrap=True, overflow="ellipsis")  # one line a layer, cut at the edge
        for layer in step.layers:
            tops = Text()
            for c in layer.top:
                style = "bold green" if c.token == step.token else ""
                tops.append(f"{label(c.piece, 10)} {c.prob:.2f}  ", style=style)
            table.add_row(str(layer.layer + 1), str(layer.rank), tops)
        self.update(table)
