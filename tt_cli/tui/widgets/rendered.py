"""A widget that shows one rich renderable, rendered once per width.

Textual renders a `height: auto` widget's rich content once to measure its height and again to draw
it, and measures again on every layout of its screen: for the masks view's three tables of n × n
cells, that was most of the `m` key's redraw (bench/bench_tui_toggle.py). Here the lines are
rendered once, and both the measure and the draw read them.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.segment import Segment
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, RichVisual, Visual
from textual.widget import Widget


class RenderedLines(RichVisual):
    """A rich renderable's lines at the last width asked for, without the widget's base style
    (which the draw adds, as Textual's own RichVisual does: the measure and the draw agree)."""

    def __init__(self, widget: Widget, renderable: RenderableType) -> None:
        super().__init__(widget, renderable)
        self._width, self._lines = -1, []

    def lines(self, width: int) -> list[list[Segment]]:
        if width != self._width:
            app = self._widget.app
            options = app.console_options.update(highlight=False, width=width)
            segments = app.console.render(self._renderable, options)
            self._width, self._lines = (
                width,
                list(Segment.split_and_crop_lines(segments, width, include_new_lines=False, pad=False)),
            )
        return self._lines

    def get_height(self, rules: RulesMap, width: int) -> int:
        return len(self.lines(width))

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        base = style.rich_style
        return [Strip(Segment.apply_style(line, base)) for line in self.lines(width)[:height]]


class Rendered(Widget):
    """Shows `content`, a rich renderable set with `update`, rendered once per width."""

    DEFAULT_CSS = """
    Rendered { height: auto; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.content: RenderableType = ""
        self._visual = RenderedLines(self, "")

    def update(self, content: RenderableType) -> None:
        self.content, self._visual = content, RenderedLines(self, content)
        self.refresh(layout=True)

    def render(self) -> Visual:
        return self._visual
