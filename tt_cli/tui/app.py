"""`tt inspect`: step through the greedy decoding of one sentence and read everything it used.

A thin App: keys -> state -> widgets. It is one App in four files, by view: this one holds the
keys, the layout, the model thread and the watchers; tt_cli/tui/stepping.py the decoding view
(heatmap, cell, candidates, what-if, heads off), tt_cli/tui/modes.py beam and explain modes and
the screens over the view (masks, help, screenshot), tt_cli/tui/analysis.py the analysis views.
What the reader asks to see is the reactive `view` (a `ViewState`, tt_cli/tui/state.py); what
the model did is the reactive `decoding` (a snapshot from tt_cli/tui/session.py), with
`beam_steps` and `explained`. Every redraw comes from a `watch_*` method.
Model work runs on ONE thread that blocks on a queue, in the order the keys were pressed, and
reports back with `call_from_thread`; the widgets only ever get data.
"""

from __future__ import annotations

import gc
import queue
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import ContentSwitcher, OptionList, Static

from core.align.links import DEFAULT_RULE, head_ranking, load_rule
from core.analysis.beam import BeamStep
from core.analysis.explain import Explanation
from core.analysis.patterns import KIND_LEGEND
from core.analysis.reference import RefComparison
from core.analysis.scrub import ScrubPoint
from core.analysis.tracefile import TraceFile
from core.checkpoint import LoadedModel
from core.errors import TTError
from tt_cli.tui.analysis import AnalysisViews
from tt_cli.tui.kept import Kept
from tt_cli.tui.modes import Modes
from tt_cli.tui.picture import SINK
from tt_cli.tui.screens.ask import AskScreen
from tt_cli.tui.session import Decoding, ScrubSession, Session, TraceSession
from tt_cli.tui.state import Cell, ViewState
from tt_cli.tui.stepping import Stepping
from tt_cli.tui.widgets.beam import BeamView
from tt_cli.tui.widgets.distribution import Distribution
from tt_cli.tui.widgets.explain import ExplainView
from tt_cli.tui.widgets.footer import NARROW, Footer
from tt_cli.tui.widgets.heatmap import Heatmap
from tt_cli.tui.widgets.lens import LensView
from tt_cli.tui.widgets.reference import ReferenceView
from tt_cli.tui.widgets.sentence import SentenceView

Job = tuple[Callable[[], Any], Callable[[Any], None]]


class InspectApp(Stepping, Modes, AnalysisViews, App[None]):
    CSS_PATH = "app.tcss"
    # The candidates list takes the keys first: ↑/↓ pick a candidate, ←/→ step. Tab reaches the heatmap.
    AUTO_FOCUS = "#dist"
    TITLE = "tt inspect"
    # Below 100 columns (a terminal's default is 80×24) the right-hand panel narrows: app.tcss.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    # The help screen (?) is built from these: the tooltip is the line it shows.
    # help and quit first: a narrow footer (80 columns) shows the first keys only.
    BINDINGS = [
        Binding("question_mark", "help", "help", tooltip="this help"),
        Binding("q", "quit", "quit", tooltip="quit"),
        # priority: an open dialog's text field would take ctrl+c as "copy", and Textual's own says "press ^q"
        Binding("ctrl+c", "quit", "quit", show=False, priority=True, tooltip="quit"),
        Binding("n,right", "next", "step", tooltip="take the next decoding step (beam mode: the next beam step)"),
        Binding("p,left", "back", "back", tooltip="step back"),
        Binding("r", "run", "run", tooltip="run to the end (EOS or the length limit)"),
        Binding("0,home", "restart", "restart", show=False, tooltip="restart from the first step"),
        Binding(
            "f", "view('next_family')", "family", tooltip="attention family: cross → masked decoder self → encoder self"
        ),
        Binding("l", "view('layer_by', 1)", "layer", tooltip="next layer"),
        Binding("L", "view('layer_by', -1)", "layer−", show=False, tooltip="previous layer"),
        Binding("h", "view('head_by', 1)", "head", tooltip="next head (… and the mean of the heads)"),
        Binding("H", "view('head_by', -1)", "head−", show=False, tooltip="previous head"),
        Binding(
            "g",
            "view('toggle_grid')",
            "grid",
            tooltip="grid: every layer × head for the selected query; beside a self-attention head, the kind of "
            f"pattern it shows on the sentence ({KIND_LEGEND}); {SINK} parks its attention",
        ),
        Binding(
            "t",
            "view('temperature_by', 1.25)",
            "temp+",
            show=False,
            tooltip="temperature up (re-shapes the distribution only)",
        ),
        Binding("T", "view('temperature_by', 0.8)", "temp−", show=False, tooltip="temperature down"),
        Binding("k", "view('top_k_by', 1)", "k+", show=False, tooltip="show one more candidate"),
        Binding("K", "view('top_k_by', -1)", "k−", show=False, tooltip="show one fewer candidate"),
        Binding("w", "what_if", "what-if", tooltip="what-if: type a piece to force at this step"),
        Binding("x", "drop_branch", "drop", show=False, tooltip="drop the what-if branch"),
        Binding(
            "o",
            "head_off",
            "head off",
            show=False,
            tooltip="selected head off / on again: greedy re-runs, diff under the output",
        ),
        Binding(
            "a",
            "view('toggle_links')",
            "links",
            show=False,
            tooltip="cross-attention: raw weights ↔ word links of the model's alignment rule",
        ),
        Binding(
            "i",
            "attribution",
            "attrib",
            show=False,
            tooltip="heatmap: attention → input×gradient → integrated gradients",
        ),
        Binding(
            "y",
            "mode('lens')",
            "lens",
            show=False,
            tooltip="logit lens: the top pieces read off each decoder layer at this step",
        ),
        Binding(
            "c",
            "reference",
            "ref",
            show=False,
            tooltip="reference, teacher-forced: its rank and p per step (--ref, or type one)",
        ),
        Binding(
            "left_square_bracket",
            "checkpoint(-1)",
            "ckpt−",
            show=False,
            tooltip="--run: the previous checkpoint (the same step, as the model was then)",
        ),
        Binding("right_square_bracket", "checkpoint(1)", "ckpt+", show=False, tooltip="--run: the next checkpoint"),
        Binding("b", "mode('beam')", "beam", tooltip="beam mode: hypotheses, survivors, pruned, re-ranking"),
        Binding(
            "e",
            "mode('explain')",
            "explain",
            tooltip="explain mode: q·k, ÷√d_k, mask, softmax, Σ·v for the selected cell",
        ),
        Binding("m", "views", "masks", tooltip="masks and positional encodings"),
        Binding(
            "v",
            "insides",
            "insides",
            show=False,
            tooltip="shapes, heads by kind, ÷√d_k, embedding, Add & Norm, FFN, PE, context",
        ),
        Binding("s", "save_svg", "svg", tooltip="save this screen as SVG"),
        Binding(
            "S",
            "save_figures",
            "figures",
            show=False,
            tooltip="save the attention map shown (family, layer, head) and this step's distribution as figures "
            "(--figure-format, matplotlib)",
        ),
    ]
    # Keys that need the model: hidden from the footer and the help when a trace or a run is replayed.
    MODEL_ACTIONS = frozenset({"what_if", "drop_branch", "head_off", "mode", "views", "reference", "insides"})

    view: reactive[ViewState] = reactive(ViewState, init=False)
    decoding: reactive[Decoding | None] = reactive(None)  # init: the first draw is of "nothing yet"
    beam_steps: reactive[list[BeamStep] | None] = reactive(None, init=False, always_update=True)
    explained: reactive[tuple[Explanation, str] | None] = reactive(None, init=False, always_update=True)
    compared: reactive[RefComparison | None] = reactive(None, init=False, always_update=True)

    def __init__(
        self,
        loaded: LoadedModel | None,
        text: str | None = None,
        *,
        top_k: int = 10,
        beam_size: int = 4,
        alpha: float = 0.6,
        svg_dir: Path | None = None,
        figure_format: str = "png",
        trace: TraceFile | None = None,
        trace_name: str = "",
        reference: str | None = None,
        scrub: list[ScrubPoint] | None = None,
        run_name: str = "",
    ) -> None:
        """`loaded` runs the model live; without it, `trace` (a saved `tt translate --trace`) is replayed."""
        super().__init__()
        self.loaded, self.text = loaded, text
        self.tokenizer = loaded.tokenizer if loaded is not None else None
        # touched on the model thread only
        self.run_name = run_name
        if scrub is not None:  # a run's checkpoints, each replayed like a trace
            self.session: Session | TraceSession = ScrubSession(scrub)
            trace = self.session.trace
        else:
            self.session = Session(loaded) if loaded is not None else TraceSession(trace)
        if scrub is not None:
            self.text = trace.source.text
            self.about = f"run {run_name or '?'} · {self.session.where} · [ ] move across checkpoints"
        elif loaded is None:
            self.text = trace.source.text
            self.about = f"trace {trace_name or '(unnamed)'} · model {Path(trace.model).name or '?'} · replay, no model"
        else:
            cfg = loaded.cfg
            self.about = (
                f"{loaded.path.name} · d_model {cfg.d_model}, h {cfg.h}, "
                f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers"
            )
        model_dir = loaded.path if loaded is not None else Path(trace.model) if trace.model else None
        self.rule, self.ranking, self._rule_problem = DEFAULT_RULE, [], ""
        try:  # the rule tt align --find-heads stored with the model, else tt's default
            dims = self.session.dims
            self.rule = load_rule(model_dir).check(dims.n_decoder_layers, dims.h)
            self.ranking = head_ranking(model_dir)
        except TTError as exc:
            self._rule_problem = f"{exc}; word links use the default rule"
        if self.rule.full_context and loaded is None:
            self.rule = DEFAULT_RULE
            self._rule_problem = "the model's alignment rule re-reads the output with the model, which a replay has not; word links use the default rule"
        self.beam_size, self.alpha = beam_size, alpha
        self.reference = reference  # a reference translation: teacher-forced in reference mode (c)
        self.svg_dir = svg_dir or Path.cwd()
        self.figure_format = figure_format  # of the figures key S writes: png, svg or pdf
        self.set_reactive(InspectApp.view, ViewState.for_dims(self.session.dims, top_k=top_k))
        self.pending = 0  # jobs queued for the model thread; tests and benchmarks wait for 0
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._beam_asked = False
        self._explaining: tuple[Decoding, Cell] | None = None  # the last explanation asked for
        self._views_drawn: Decoding | None = None  # the decoding the masks and positions screen shows
        # model results kept for what they were made from (tt_cli/tui/kept.py)
        self.attributed, self.lensed, self.sinks, self.kinds = Kept(), Kept(), Kept(), Kept()
        self.reread = Kept()  # the output re-read without the look-ahead mask, for a full-context alignment rule

    # ------------------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield SentenceView()
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Heatmap()
                yield Static(id="cell")
            with ContentSwitcher(id="right", initial="dist"):
                yield Distribution(id="dist")
                yield BeamView(id="beam")
                yield ExplainView(id="explain")
                yield LensView(id="lens")
                yield ReferenceView(id="ref")
        yield Footer()

    def on_mount(self) -> None:
        # torch, the model and Textual leave ~200k long-lived objects, and a full (generation 2)
        # collection walks them all: ~0.2 s, at whichever key press it falls on (bench/bench_tui_toggle.py).
        # Frozen, they are left out of the cyclic collector (reference counting still frees them).
        gc.freeze()
        self.model_thread()
        if self._rule_problem:
            self.notify(self._rule_problem, severity="warning", title="tt")
        if self.text:
            self.start(self.text)
        else:
            self.push_screen(
                AskScreen("Sentence to translate and inspect (French):", "Je suis étudiant."),
                lambda text: self.exit() if text is None else self.start(text),
            )

    def start(self, text: str) -> None:
        self.submit(lambda: self.session.start(text), self._decoded)
        if self.reference:
            self.compare(self.reference)

    # ------------------------------------------------------------------------------ the model thread
    @work(thread=True, group="model")
    def model_thread(self) -> None:
        """Run queued jobs one at a time, in order; block between them (no polling)."""
        while (item := self._jobs.get()) is not None:
            job, then = item
            try:
                result = job()
            except TTError as exc:
                self.call_from_thread(self._failed, str(exc))
                continue
            self.call_from_thread(self._done, then, result)

    def on_unmount(self) -> None:
        self._jobs.put(None)  # wakes the model thread so that it ends with the app
        gc.unfreeze()  # the process may go on without the app (tt's REPL, the tests)

    def submit(self, job: Callable[[], Any], then: Callable[[Any], None]) -> None:
        self.pending += 1
        self._jobs.put((job, then))

    def _done(self, then: Callable[[Any], None], result: Any) -> None:
        self.pending -= 1
        then(result)

    def _failed(self, message: str) -> None:
        self.pending -= 1
        self.notify(message, severity="error", title="tt")

    def _decoded(self, d: Decoding) -> None:
        self.decoding = d

    # ------------------------------------------------------------------------------ watchers: every redraw
    def watch_decoding(self, d: Decoding | None) -> None:
        where = "what-if branch" if d is not None and d.branch else "greedy"
        # #title and #cell have a fixed height (app.tcss): a new text needs no layout of the screen
        self.query_one("#title", Static).update(
            f"[b]tt inspect[/b] · {self.about} · {where} · ? for help", layout=False
        )
        self.query_one(SentenceView).show(d, self.compared)
        self._draw_heatmap()
        self._draw_cell()
        self._draw_distribution()
        self._draw_lens()
        self._draw_reference()

    def watch_view(self, old: ViewState, new: ViewState) -> None:
        """Redraw only what the change touches: a cursor move must not rebuild every panel."""
        self.query_one(ContentSwitcher).current = new.mode
        if new.picture != old.picture:
            self._draw_heatmap()
        self._draw_cell()
        if (new.temperature, new.top_k) != (old.temperature, old.top_k):
            self._draw_distribution()
        if new.mode == "beam":
            self._draw_beam()
        if new.mode == "explain":
            self._draw_explanation()
        if new.mode == "lens":
            self._draw_lens()
        if new.mode == "ref":
            self._draw_reference()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """False hides a key (footer, help) and ignores it: model keys in a replay, `i` when a
        replayed trace holds no attribution."""
        if action in self.MODEL_ACTIONS:
            return self.session.live
        if action == "attribution":
            return bool(self.session.attributions)
        return True

    # ------------------------------------------------------------------------------ messages from the widgets
    # (here, not in the mixins: Textual collects @on handlers from the App's own class body)
    @on(Heatmap.CellSelected)
    def cell_selected(self, event: Heatmap.CellSelected) -> None:
        self.view = self.view.select(event.row, event.col)
        if self.view.mode == "explain":
            self._explain()

    @on(OptionList.OptionSelected, "#dist")
    def candidate_chosen(self, event: OptionList.OptionSelected) -> None:
        self.what_if(int(event.option.id))


def make_app(loaded: LoadedModel | None, text: str | None = None, **options: Any) -> InspectApp:
    """The app without the CLI around it: tests and benchmarks build it this way."""
    return InspectApp(loaded, text, **options)
