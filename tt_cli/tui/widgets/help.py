"""The help screen: what each key does, and how to read the panels."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("n / →", "take the next decoding step"),
    ("p / ←", "step back"),
    ("r", "run to the end (EOS or the length limit)"),
    ("0", "restart from the first step"),
    ("f", "attention family: cross → masked decoder self → encoder self"),
    ("l / L", "next / previous layer"),
    ("h / H", "next / previous head (… and the mean of the heads)"),
    ("g", "grid: every layer × head for the selected query"),
    ("tab, arrows, click", "select a heatmap cell: its weight and its two pieces"),
    ("t / T", "temperature up / down (re-shapes the distribution only)"),
    ("k / K", "show more / fewer candidates"),
    ("enter", "what-if: continue decoding from the highlighted candidate"),
    ("w", "what-if: type a piece to force at this step"),
    ("x", "drop the what-if branch"),
    ("b", "beam mode: hypotheses, survivors, pruned, re-ranking"),
    ("e", "explain mode: q·k, ÷√d_k, mask, softmax, Σ·v for the selected cell"),
    ("m", "masks and positional encodings"),
    ("s", "save this screen as SVG"),
    ("?", "this help"),
    ("q", "quit"),
]


class HelpScreen(ModalScreen[None]):
    AUTO_FOCUS = "*"  # not the app's "#dist", which this screen does not have
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 84; height: auto; max-height: 90%; border: round $accent; padding: 1 2; background: $surface; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold yellow", no_wrap=True)
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        intro = Text(
            "tt inspect decodes one sentence greedily, one piece per step. The heatmap shows the attention "
            "behind the current step (▶ row); the panel on the right shows the next-piece distribution.\n",
            style="dim",
        )
        with VerticalScroll():
            yield Static(intro)
            yield Static(table)
