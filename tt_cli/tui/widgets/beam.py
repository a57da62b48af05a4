"""Beam mode: at each step the shortlist of extended hypotheses, which survive, which are pruned,
which finish; at the last step the length-penalty re-ranking of the finished ones (core.analysis.beam)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from core.analysis.beam import BeamStep
from core.data.tokenizer import Tokenizer
from tt_cli.tui.widgets.heatmap import label, nth

FATE_STYLE = {"kept": "bold green", "finished": "bold yellow", "pruned": "dim strike"}


class BeamView(Static):
    DEFAULT_CSS = """
    BeamView { height: 1fr; overflow-y: auto; }
    """

    def show(
        self, steps: list[BeamStep] | None, index: int, tokenizer: Tokenizer, *, beam_size: int, alpha: float
    ) -> None:
        self.border_title = f"beam search · beam {beam_size} · α {alpha}"
        if steps is None:
            self.update(Text("running beam search…", style="dim italic"))
            return
        index = min(max(index, 0), len(steps) - 1)
        step = steps[index]
        self.border_subtitle = f"beam step {nth(index, len(steps))} (n/p)"
        table = Table(box=None, padding=(0, 1), header_style="bold")
        table.add_column("from", justify="right")
        table.add_column("hypothesis", overflow="fold")
        table.add_column("log p", justify="right")
        table.add_column("score", justify="right")
        table.add_column("fate")
        for c in step.candidates:
            style = FATE_STYLE[c.fate]
            pieces = " ".join(label(p, 12) for p in tokenizer.pieces(c.tokens))  # pieces: a step adds one
            table.add_row(
                str(c.parent),
                Text(pieces, style=style),
                f"{c.logprob:.2f}",
                f"{c.score:.2f}",
                Text(c.fate, style=style),
            )
        parts = [table]
        if step.ranking:
            ranking = Table(
                title="length-penalty re-ranking: score / lp(|Y|)", box=None, padding=(0, 1), header_style="bold"
            )
            for name, justify in (
                ("#", "right"),
                ("translation", "left"),
                ("log p", "right"),
                ("|Y|", "right"),
                ("normalised", "right"),
            ):
                ranking.add_column(name, justify=justify, overflow="fold")
            for r in step.ranking:
                style = "bold green" if r.rank == 0 else ""
                ranking.add_row(
                    str(r.rank + 1),
                    Text(tokenizer.decode(r.tokens) or "∅", style=style),
                    f"{r.raw_score:.2f}",
                    str(r.length),
                    f"{r.normalised:.3f}",
                )
            parts += [Text(""), ranking]
        self.update(Group(*parts))
