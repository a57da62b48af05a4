"""`tt learn`: the lesson in the notes' order, one step a screen, on the live model.

A thin App: the step on screen is the reactive `index`; what the model said about a step is
computed once, in a worker thread, into `computed`, and the watchers redraw. Each step shows its
idea and formula and the notes' toy example computed by tt (left), and the same step on the live
model: its numbers and, where the step is about an attention table, the table itself (right). `i` opens
`tt inspect` on that step's view: the app exits with the step's key, `run_lesson` opens inspect on the
step's sentence with the step's layer and head selected, and when inspect quits the lesson comes back at
the same step.
"""

from __future__ import annotations

from functools import partial

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from core.checkpoint import LoadedModel
from core.errors import TTError
from core.learn.lesson import Step, live_matrix, live_numbers, own_step
from core.learn.live import Matrix
from core.learn.steps import STEPS
from tt_cli.tui.learn.steps_screen import StepsScreen
from tt_cli.tui.learn.text import lesson_text, live_text, progress_text
from tt_cli.tui.screens.help import HelpScreen
from tt_cli.tui.widgets.footer import Footer
from tt_cli.tui.widgets.heatmap import Heatmap, HeatmapData
from tt_cli.tui.widgets.too_small import TooSmall

Computed = tuple[list[tuple[str, str]], Matrix | None]
MIN_SIZE = (60, 18)  # columns, rows: below, the three panels leave no line to read
SHORT = 30  # rows: below, the live numbers give the attention table more of the right-hand side
HELP_INTRO = (
    "tt learn walks the notes one step a screen: the idea, formula and a toy on the left, the same step on "
    "the live model on the right. tab picks the panel that ↑/↓ scroll (its border lights up); on the "
    "attention table the arrows move the selected cell, and the table scrolls to keep it in view. Layers, "
    "heads and steps count from 1, as in tt inspect.\n"
)


class LessonMap(Heatmap):
    """The attention table of a step: once tab reaches it, the arrows move its cell (the footer says so)."""

    BINDINGS = [Binding("down", "move(1, 0)", "cell", key_display="←↑↓→", tooltip=Heatmap.BINDINGS[0].tooltip)]


class Panel(VerticalScroll, inherit_bindings=False):
    """A scrolling panel that takes only ↑/↓ (and page keys): ←/→ stay the lesson's steps."""

    BINDINGS = [
        Binding("down,j", "scroll_down", "scroll", key_display="↑↓"),
        Binding("up,k", "scroll_up", "scroll up", show=False),
        Binding("pagedown", "page_down", "page", show=False),
        Binding("pageup", "page_up", "page up", show=False),
    ]


def shown_sentence(s: Step) -> str:
    """A step's sentences as the live panel names them (a source and its reference: both)."""
    return "  |  ".join(s.sentences)


class LearnApp(App[str | None]):
    TITLE = "tt learn"
    AUTO_FOCUS = None  # keys go to the app: ←/→ step through the lesson, not scroll a panel
    CSS = """
    #progress { height: 1; background: $primary-background; padding: 0 1; }
    #body { height: 1fr; }
    #lesson { width: 1fr; border: round $primary; padding: 0 1; }
    #right { width: 1fr; }
    #live { height: auto; max-height: 100%; border: round $accent; padding: 0 1; }
    #right.-map #live { max-height: 60%; }
    #right.-map.-short #live { max-height: 45%; }  /* 24 rows: the table keeps rows to read */
    #live-numbers { height: auto; }
    LearnApp Heatmap { border: round $accent; }
    #lesson:focus, #live:focus, LearnApp Heatmap:focus { border: round $warning; }
    """
    # help first: at 80 columns the footer shows every key but the hidden ones, which ? lists.
    BINDINGS = [
        Binding("question_mark", "help", "keys", tooltip="every key of the lesson (this list)"),
        Binding("n,right,space", "move(1)", "next", tooltip="the next step"),
        Binding("p,left", "move(-1)", "back", tooltip="the step before"),
        Binding(
            "tab",
            "focus_next",
            "panel",
            priority=True,  # over the screen's own (hidden) tab: the footer shows it
            tooltip="the next panel to scroll (lighter border): the lesson, the live numbers, the attention table",
        ),
        Binding(
            "down,j",
            "scroll_lesson(3)",
            "scroll",
            key_display="↑↓",
            tooltip="scroll the panel tab chose (the lesson's text when none is): down",
        ),
        Binding("up,k", "scroll_lesson(-3)", "scroll up", show=False, tooltip="… up"),
        Binding("l", "steps", "steps", tooltip="the list of steps: jump to one"),
        Binding("i", "inspect", "inspect", tooltip="open this step in tt inspect; its q comes back here"),
        Binding("q", "quit", "quit", tooltip="quit"),
    ]

    index: reactive[int] = reactive(0, init=False)
    computed: reactive[dict[int, Computed]] = reactive(dict, init=False, always_update=True)

    def __init__(self, loaded: LoadedModel, *, start: int = 1, sentence: str | None = None) -> None:
        """`start`: the first step shown, 1-based as `tt learn --step N`; `sentence`: the learner's own
        ("French" or "French | English"), for the steps that can take it (`own_step`)."""
        super().__init__()
        if not 1 <= start <= len(STEPS):
            raise ValueError(f"step {start} does not exist; the lesson has steps 1 to {len(STEPS)}")
        self.loaded = loaded
        self.sentence = sentence
        self.set_reactive(LearnApp.index, start - 1)
        self.pending = 0  # steps being computed; tests wait for 0
        self._asked: set[int] = set()

    def compose(self) -> ComposeResult:
        yield Static(id="progress")
        with Horizontal(id="body"):
            with Panel(id="lesson"):
                yield Static(id="lesson-text")
            with Vertical(id="right"):
                with Panel(id="live"):
                    yield Static(id="live-numbers")
                yield LessonMap()
        yield TooSmall(MIN_SIZE, "tt learn")
        yield Footer()

    def on_mount(self) -> None:
        self._draw()

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(TooSmall).fit(*event.size)
        self.query_one("#right").set_class(event.size.height < SHORT, "-short")

    # ------------------------------------------------------------------ the model, off the UI thread
    def _ask(self, index: int) -> None:
        """Compute step `index` on the model once, in a thread; the answer lands in `computed`."""
        if index in self._asked:
            return
        self._asked.add(index)
        self.pending += 1
        self.run_worker(partial(self._compute, index), thread=True, group="live")

    def step_at(self, index: int) -> Step:
        """Step `index` (0-based) on the learner's sentence where it takes one."""
        return own_step(STEPS[index], self.sentence)

    @property
    def selection(self) -> Matrix | None:
        """The attention table the step on screen shows (None: told in numbers, or still computing)."""
        return self.computed.get(self.index, (None, None))[1]

    def _compute(self, index: int) -> None:
        s = self.step_at(index)
        try:
            result = live_numbers(s, self.loaded), live_matrix(s, self.loaded)
        except (TTError, ValueError) as exc:  # a model the step cannot read: say so in its panel, go on
            result = [("could not compute", str(exc))], None
        self.call_from_thread(self._computed, index, result)

    def _computed(self, index: int, result: Computed) -> None:
        self.pending -= 1
        self.computed = {**self.computed, index: result}

    # ------------------------------------------------------------------ redraws
    def watch_index(self) -> None:
        self._draw()

    def watch_computed(self) -> None:
        self._draw_live()

    def _draw(self) -> None:
        s = self.step_at(self.index)
        self.query_one("#progress", Static).update(progress_text(self.index))
        self.query_one("#lesson-text", Static).update(lesson_text(s))
        self.query_one("#lesson", VerticalScroll).scroll_home(animate=False)
        self._ask(self.index)
        self._draw_live()

    def _draw_live(self) -> None:
        s = self.step_at(self.index)
        lines, matrix = self.computed.get(self.index, (None, None))
        self.query_one("#live-numbers", Static).update(live_text(s, lines, shown_sentence(s)))
        heatmap = self.query_one(Heatmap)
        heatmap.display = matrix is not None
        self.query_one("#right").set_class(matrix is not None, "-map")
        if matrix is not None:
            heatmap.show(HeatmapData(matrix.title, matrix.rows, matrix.cols, matrix.weights, matrix.hidden))

    # ------------------------------------------------------------------ keys
    def action_move(self, delta: int) -> None:
        new = self.index + delta
        if not 0 <= new < len(STEPS):
            self.notify("that was the last step: q quits, i opens it in tt inspect" if delta > 0 else "the first step")
            return
        self.index = new

    def action_scroll_lesson(self, lines: int) -> None:
        """↑/↓ with no panel chosen (a chosen one takes its own keys first): the lesson's text."""
        self.query_one("#lesson", VerticalScroll).scroll_relative(y=lines, animate=False)

    def action_help(self) -> None:
        self.push_screen(
            HelpScreen(
                [("", self.BINDINGS), ("in the attention table (tab to it)", Heatmap.BINDINGS)],
                intro=HELP_INTRO,
                leave="esc, q or ? closes this list (↑/↓ scroll it); then q quits tt learn\n",
            )
        )

    def action_steps(self) -> None:
        self.push_screen(StepsScreen(self.index), lambda chosen: None if chosen is None else self._jump(chosen))

    def _jump(self, index: int) -> None:
        self.index = index

    def action_inspect(self) -> None:
        self.exit(STEPS[self.index].key)


def make_learn_app(loaded: LoadedModel, *, start: int = 1, sentence: str | None = None) -> LearnApp:
    """The lesson without the CLI around it: tests build it this way."""
    return LearnApp(loaded, start=start, sentence=sentence)


def run_lesson(loaded: LoadedModel, *, start: int = 1, sentence: str | None = None) -> None:
    """The lesson, and `tt inspect` from it: `i` opens the step in inspect, inspect's `q` comes back to it."""
    from tt_cli.tui.learn.inspect_step import inspect_app_for

    while True:
        lesson = make_learn_app(loaded, start=start, sentence=sentence)
        chosen = lesson.run()
        if not chosen:
            return
        start = lesson.index + 1
        inspect_app_for(loaded, lesson.step_at(lesson.index), select=lesson.selection).run()
