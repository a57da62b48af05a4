"""A terminal too small to read: one sentence saying so instead of panels cut to pieces. The app
calls `fit` with the terminal's size when it starts and on every resize; below the size, the
screen's other parts (all but the footer, so q still shows) are hidden until it grows again."""

from __future__ import annotations

from textual.widgets import Footer, Static


class TooSmall(Static):
    DEFAULT_CSS = """
    TooSmall { width: 100%; height: 1fr; display: none; content-align: center middle; text-align: center;
               padding: 1 2; }
    """

    def __init__(self, least: tuple[int, int], what: str) -> None:
        super().__init__()
        self.least, self.what = least, what
        self.hidden: list = []  # the parts this notice hid, shown again when the terminal grows

    def fit(self, width: int, height: int) -> None:
        w, h = self.least
        small = width < w or height < h
        if small and not self.hidden:  # only the screen's own parts shown now: never Textual's tooltip layer
            parts = [p for p in self.parent.children if p is not self and not isinstance(p, Footer)]
            self.hidden = [p for p in parts if p.display and not p.has_class("-textual-system")]
            for part in self.hidden:
                part.display = False
        elif not small:
            for part in self.hidden:
                part.display = True
            self.hidden = []
        self.display = small
        if small:
            self.update(
                f"{self.what} needs a terminal of at least {w}×{h}; this one is {width}×{height}.\n"
                "Make it larger to go on, or press q to quit."
            )
