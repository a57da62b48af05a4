"""The help screen: every key, read from the BINDINGS it is given, and how to read the panels.

No key list is kept by hand: a row is a binding's keys and its tooltip (or, without one, its
footer description), so a new binding shows up here by itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = (
    "tt inspect decodes one sentence greedily, one piece per step. The heatmap shows the attention "
    "behind the current step (▶ row); the panel on the right shows the next-piece distribution. "
    "Steps, layers, heads and checkpoints count from 1 (step 3 of 12, layer 1 of 6); positions "
    "count from 0, as pos in the paper.\n"
)
LEAVE = "esc, q or ? closes this help (↑/↓ scroll) · q or ctrl+c quits tt inspect\n"


class HelpScreen(ModalScreen[None]):
    AUTO_FOCUS = "*"  # not the app's "#dist", which this screen does not have
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 96; max-width: 100%; height: auto; max-height: 90%; border: round $accent; padding: 0 2; background: $surface; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close")]

    def __init__(
        self, sections: Iterable[tuple[str, Iterable[Binding]]], *, intro: str = INTRO, leave: str = LEAVE
    ) -> None:
        """sections: (a heading, or "" for none; the bindings listed under it); intro and leave: the
        lines above the keys (tt inspect's by default)."""
        super().__init__()
        self.sections = [(title, list(bindings)) for title, bindings in sections]
        self.intro, self.leave = intro, leave

    def keys(self, binding: Binding) -> str:
        """'n / →' for Binding("n,right", …): each key as the footer would show it."""
        names = [key.strip() for key in binding.key.split(",")]
        return " / ".join(self.app.get_key_display(Binding(name, binding.action)) for name in names)

    def rows(self, bindings: list[Binding]) -> list[tuple[str, str]]:
        """(keys, what) per binding; neighbours that say the same thing share a row (the arrows)."""
        rows: list[tuple[str, str]] = []
        for binding in bindings:
            what = binding.tooltip or binding.description
            if rows and rows[-1][1] == what:
                rows[-1] = (f"{rows[-1][0]} {self.keys(binding)}", what)
            else:
                rows.append((self.keys(binding), what))
        return rows

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold yellow", no_wrap=True)
        table.add_column()
        for title, bindings in self.sections:
            if title:
                table.add_row("", "")
                table.add_row("", Text(title, style="bold"))
            for keys, what in self.rows(bindings):
                table.add_row(keys, what)
        with VerticalScroll():
            yield Static(Text(self.leave, style="bold"))
            yield Static(Text(self.intro, style="dim"))
            yield Static(table)
