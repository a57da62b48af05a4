"""Reference mode: the reference translation teacher-forced, step by step, beside the model's choice.

At step t the model is fed BOS + the reference's first t pieces (core/analysis/reference.py); the
table gives the reference piece's rank and probability there and what the model would take
instead. The first step where they differ is highlighted: that is where greedy decoding would leave
the reference.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from core.analysis.reference import RefComparison
from tt_cli.tui.widgets.heatmap import label


def divergence_line(c: RefComparison) -> str:
    """One line: where the model first leaves the reference, or that it never does."""
    if c.first_divergence is None:
        return f"the model's choice is the reference piece at every step · log p(ref) {c.ref_logprob:.2f}"
    s = c.steps[c.first_divergence]
    return (
        f"first divergence at step {s.index + 1}: reference {label(s.ref_piece, 12)} (rank {s.ref_rank}, "
        f"p {s.ref_prob:.2f}) vs model {label(s.model_piece, 12)} (p {s.model_prob:.2f}) · "
        f"log p(ref) {c.ref_logprob:.2f}"
    )


class ReferenceView(Static):
    DEFAULT_CSS = """
    ReferenceView { height: 1fr; overflow-y: auto; }
    """

    def show(self, c: RefComparison | None, current: int | None = None) -> None:
        self.border_title = "reference, teacher-forced"
        if c is None:
            self.update(
                Text('no reference: start with tt inspect --ref "…" "…", or press c to type one', style="dim italic")
            )
            return
        self.border_subtitle = "first divergence in red"
        table = Table(box=None, padding=(0, 1), show_edge=False)
        for name, justify in (
            ("step", "right"),
            ("reference", "left"),
            ("rank", "right"),
            ("p", "right"),
            ("model", "left"),
            ("p", "right"),
        ):
            table.add_column(name, justify=justify)
        for s in c.steps:
            style = "bold red" if s.index == c.first_divergence else ("" if s.agrees else "yellow")
            mark = "▶" if s.index == current else " "
            table.add_row(
                f"{mark}{s.index + 1}",
                label(s.ref_piece, 12),
                str(s.ref_rank),
                f"{s.ref_prob:.2f}",
                "=" if s.agrees else label(s.model_piece, 12),
                f"{s.model_prob:.2f}",
                style=style,
            )
        self.update(Group(Text(f"“{c.reference}”", style="italic"), Text(divergence_line(c), style="dim"), table))
