"""A one-line question in a modal: the sentence to inspect, or the piece to force (what-if)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class AskScreen(ModalScreen[str | None]):
    AUTO_FOCUS = "Input"  # not the app's "#dist", which this screen does not have
    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    AskScreen > Vertical { width: 70; max-width: 100%; height: auto; border: round $accent; padding: 1 2; background: $surface; }
    AskScreen Label { margin-bottom: 1; }
    AskScreen #leave { margin: 1 0 0 0; color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, question: str, placeholder: str = "") -> None:
        super().__init__()
        self.question, self.placeholder = question, placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(placeholder=self.placeholder)
            yield Label("enter: go on · esc: cancel · ctrl+c: quit tt inspect", id="leave")

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
