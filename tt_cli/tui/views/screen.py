"""The insides of the model on the sentence `tt inspect` shows: one tab per thing the notes draw.

Tensor shapes, heads by pattern kind, ÷√d_k and saturation, embedding + position, Add & Norm, the
feed-forward network and the parameter breakdown, positional encodings, contextual embeddings.
The screen is handed data (`Internals`); `,` `.` move the source piece, `l` `L` the encoder
layer, `c` asks for a second sentence and the app's model thread compares the word in it.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static, TabbedContent, TabPane

from tt_cli.tui.screens.ask import AskScreen
from tt_cli.tui.views.data import Internals, gather, with_context, word_at
from tt_cli.tui.views.panels import PANELS, where
from tt_cli.tui.widgets.footer import Footer


class InsidesScreen(Screen[None]):
    AUTO_FOCUS = "TabbedContent Tabs"
    DEFAULT_CSS = """
    InsidesScreen #where { height: 1; background: $primary-background; padding: 0 1; }
    InsidesScreen TabbedContent { height: 1fr; }
    InsidesScreen TabPane { padding: 0 1; height: 1fr; }
    """
    BINDINGS = [
        Binding("full_stop", "move(1, 0)", "piece+", tooltip="the next source piece"),
        Binding("comma", "move(-1, 0)", "piece−", tooltip="the previous source piece"),
        Binding("l", "move(0, 1)", "layer", tooltip="the next encoder layer"),
        Binding("L", "move(0, -1)", "layer−", show=False, tooltip="the previous encoder layer"),
        Binding("c", "compare", "compare", tooltip="contextual: the selected word in a second sentence you type"),
        Binding("escape,q,v", "app.pop_screen", "back"),
    ]

    position: reactive[int] = reactive(0, init=False)
    layer: reactive[int] = reactive(0, init=False)
    data: reactive[Internals | None] = reactive(None, init=False, always_update=True)

    def __init__(self, data: Internals, tab: str | None = None) -> None:
        """tab: the panel shown first (a key of PANELS), else the first."""
        super().__init__()
        self.first_tab = tab
        self.set_reactive(InsidesScreen.data, data)
        self.set_reactive(InsidesScreen.position, min(1, len(data.walk.pieces) - 1))

    def compose(self) -> ComposeResult:
        yield Static(id="where")
        with TabbedContent(initial=self.first_tab or ""):
            for key, (title, _) in PANELS.items():
                with TabPane(title, id=key):
                    yield VerticalScroll(Static(id=f"panel-{key}"))
        yield Footer()

    def on_mount(self) -> None:
        self.draw()

    def draw(self) -> None:
        d = self.data
        self.query_one("#where", Static).update(where(d, self.position, self.layer))
        for key, (_, panel) in PANELS.items():
            self.query_one(f"#panel-{key}", Static).update(panel(d, self.position, self.layer))

    watch_position = watch_layer = watch_data = draw  # every change redraws the panels (text only: cheap)

    def show(self, data: Internals) -> None:
        """New data (another sentence or step): start again at its second piece and the first layer."""
        self.position, self.layer = min(1, len(data.walk.pieces) - 1), 0
        self.data = data

    def action_move(self, d_position: int, d_layer: int) -> None:
        n, layers = len(self.data.walk.pieces), len(self.data.walk.layers)
        self.position = (self.position + d_position) % n
        self.layer = (self.layer + d_layer) % layers

    def action_compare(self) -> None:
        word = word_at(self.data.walk.pieces, self.position)
        self.query_one(TabbedContent).active = "contextual"

        def compare(second: str | None) -> None:
            if not second:
                return
            loaded, data = self.app.loaded, self.data

            def job():
                try:
                    return with_context(loaded, data, word, second)
                except ValueError as exc:  # the word is not in the second sentence
                    return str(exc)

            self.app.submit(job, self._compared)

        self.app.push_screen(
            AskScreen(f"A second sentence with “{word}” in it:", "Le prix est d'une livre sterling."), compare
        )

    def _compared(self, result: Internals | str) -> None:
        if isinstance(result, str):
            self.notify(result, severity="error", title="tt")
        else:
            self.data = result


def open_insides(app, tab: str | None = None) -> None:
    """Key v of tt inspect: compute the sentence's insides on the model thread, then show them
    (on `tab`, one of PANELS, when given)."""
    d = app.decoding
    if d is None or not app.live("the insides views"):
        return
    loaded, text, translation = app.loaded, d.source.text, d.active.text

    def show(data: Internals) -> None:
        if not app.is_screen_installed("insides"):
            app.install_screen(InsidesScreen(data, tab), "insides")  # opens on `tab`: no tab switch drawn
            app.push_screen("insides")
            return
        screen = app.get_screen("insides")
        if screen.data.text != text:
            screen.show(data)
        app.push_screen("insides")
        if tab is not None:
            app.call_after_refresh(lambda: setattr(screen.query_one(TabbedContent), "active", tab))

    app.submit(lambda: gather(loaded, text, translation), show)
