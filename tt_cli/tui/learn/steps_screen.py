"""The list of the lesson's steps, to jump to one: Enter picks it, Escape goes back."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from core.learn.steps import STEPS


class StepsScreen(ModalScreen[int | None]):
    AUTO_FOCUS = "OptionList"
    DEFAULT_CSS = """
    StepsScreen { align: center middle; }
    StepsScreen > Vertical { width: 72; height: auto; border: round $accent; padding: 0 1; background: $surface; }
    StepsScreen OptionList { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape,l,q", "cancel", "back")]

    def __init__(self, current: int) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Jump to a step (↑/↓, Enter):")
            yield OptionList(*(Option(f"{i + 1:>2}. {s.title}", id=str(i)) for i, s in enumerate(STEPS)))

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = self.current

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id))

    def action_cancel(self) -> None:
        self.dismiss(None)
