"""The masks and positional-encoding views, in tabs on their own screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane

from core.decode.stepper import Stepper
from tt_cli.tui.widgets.masks import MasksView
from tt_cli.tui.widgets.positions import PositionsView


class ViewsScreen(Screen[None]):
    AUTO_FOCUS = "*"  # not the app's "#dist", which this screen does not have
    BINDINGS = [Binding("escape,m,q", "app.pop_screen", "back")]

    def __init__(self, stepper: Stepper) -> None:
        super().__init__()
        self.stepper = stepper

    def compose(self) -> ComposeResult:
        with TabbedContent():
            with TabPane("masks", id="masks"):
                yield VerticalScroll(MasksView())
            with TabPane("positional encodings", id="positions"):
                yield VerticalScroll(PositionsView())
        yield Footer()

    def on_mount(self) -> None:
        s = self.stepper
        # Decoder inputs so far (BOS, y_0, …) plus the next one, capped so the grids fit a terminal.
        ids = (s.target_inputs + ([s.steps[-1].token] if s.steps else []))[:24]
        self.query_one(MasksView).show(s.tokenizer.pieces(ids), ids, s.cfg.pad_id)
        self.query_one(PositionsView).show(s.model, s.source.pieces)
