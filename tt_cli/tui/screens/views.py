"""The masks and positional-encoding views, in tabs on their own screen. It is handed data only."""

from __future__ import annotations

import torch
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from tt_cli.tui.widgets.footer import Footer
from tt_cli.tui.widgets.masks import MasksView
from tt_cli.tui.widgets.positions import PositionsView


class ViewsScreen(Screen[None]):
    AUTO_FOCUS = "*"  # not the app's "#dist", which this screen does not have
    BINDINGS = [Binding("escape,m,q", "app.pop_screen", "back")]

    def __init__(
        self, *, target_ids: list[int], target_pieces: list[str], pad_id: int,
        positions: torch.Tensor, positional: str, source_pieces: list[str],
    ) -> None:
        """target_*: the decoder inputs the masks are drawn for; positions (S, d_model): the
        encodings added to the source embeddings, of kind `positional` (sinusoidal or learned)."""
        super().__init__()
        self.target_ids, self.target_pieces, self.pad_id = target_ids, target_pieces, pad_id
        self.positions, self.positional, self.source_pieces = positions, positional, source_pieces

    def compose(self) -> ComposeResult:
        with TabbedContent():
            with TabPane("masks", id="masks"):
                yield VerticalScroll(MasksView())
            with TabPane("positional encodings", id="positions"):
                yield VerticalScroll(PositionsView())
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(MasksView).show(self.target_pieces, self.target_ids, self.pad_id)
        self.query_one(PositionsView).show(self.positions, self.positional, self.source_pieces)
