"""The masks and positional-encoding views, in tabs on their own screen. It is handed data only."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from tt_cli.tui.widgets.footer import Footer
from tt_cli.tui.widgets.masks import MasksView
from tt_cli.tui.widgets.positions import PositionsView


@dataclass(frozen=True, eq=False)  # no field-wise ==: a tensor field
class MasksAndPositions:
    """What the screen draws. target_*: the decoder inputs the masks are drawn for; positions
    (S, d_model): the encodings added to the source embeddings, of kind `positional` (sinusoidal or learned)."""

    target_ids: list[int]
    target_pieces: list[str]
    pad_id: int
    positions: torch.Tensor
    positional: str
    source_pieces: list[str]


class ViewsScreen(Screen[None]):
    """Built once and kept by the app: `show` draws new data into it (a new step or sentence), and
    each opening starts on the masks tab, scrolled to the top, as a new screen would."""

    AUTO_FOCUS = "*"  # not the app's "#dist", which this screen does not have
    BINDINGS = [Binding("escape,m,q", "app.pop_screen", "back")]

    def __init__(self, shown: MasksAndPositions) -> None:
        super().__init__()
        self.shown = shown

    def compose(self) -> ComposeResult:
        with TabbedContent():
            with TabPane("masks", id="masks"):
                yield VerticalScroll(MasksView())
            with TabPane("positional encodings", id="positions"):
                yield VerticalScroll(PositionsView())
        yield Footer()

    def on_mount(self) -> None:
        self.draw()

    def on_screen_resume(self) -> None:
        self.query_one(TabbedContent).active = "masks"
        for scroll in self.query(VerticalScroll):
            scroll.scroll_home(animate=False)

    def show(self, shown: MasksAndPositions) -> None:
        self.shown = shown
        self.draw()

    def draw(self) -> None:
        s = self.shown
        self.query_one(MasksView).show(s.target_pieces, s.target_ids, s.pad_id)
        self.query_one(PositionsView).show(s.positions, s.positional, s.source_pieces)
