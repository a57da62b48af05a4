"""`tt inspect`: step through the greedy decoding of one sentence and read everything it used.

A thin App: keys -> state -> widgets. What the reader asks to see is the reactive `view` (a
`ViewState`, tt_cli/tui/state.py); what the model did is the reactive `decoding` (a snapshot from
tt_cli/tui/session.py), with `beam_steps` and `explained`. Every redraw comes from a `watch_*` method.
Model work runs on ONE thread that blocks on a queue, in the order the keys were pressed, and
reports back with `call_from_thread`; the widgets only ever get data.
"""

from __future__ import annotations

import gc
import queue
import time
from collections.abc import Callable
from operator import methodcaller
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import ContentSwitcher, OptionList, Static

from core.align.links import DEFAULT_RULE, head_ranking, load_rule
from core.analysis.attribute import Attribution
from core.analysis.beam import BeamStep
from core.analysis.explain import Explanation
from core.analysis.reference import RefComparison
from core.analysis.scrub import ScrubPoint
from core.analysis.tracefile import TraceFile
from core.checkpoint import LoadedModel
from core.errors import TTError
from core.files import atomic_write_bytes
from core.model.attention import Head
from tt_cli.tui.kept import Kept
from tt_cli.tui.picture import attribution_picture, attribution_text, cell_text, picture
from tt_cli.tui.screens.ask import AskScreen
from tt_cli.tui.screens.help import HelpScreen
from tt_cli.tui.screens.views import MasksAndPositions, ViewsScreen
from tt_cli.tui.session import Decoding, ScrubSession, Session, TraceSession, find_piece
from tt_cli.tui.state import Cell, ViewState
from tt_cli.tui.widgets.beam import BeamView
from tt_cli.tui.widgets.distribution import Distribution
from tt_cli.tui.widgets.explain import ExplainView
from tt_cli.tui.widgets.footer import Footer
from tt_cli.tui.widgets.heatmap import Heatmap, label
from tt_cli.tui.widgets.lens import LensView
from tt_cli.tui.widgets.reference import ReferenceView
from tt_cli.tui.widgets.sentence import SentenceView

Job = tuple[Callable[[], Any], Callable[[Any], None]]


class InspectApp(App[None]):
    CSS_PATH = "app.tcss"
    # The candidates list takes the keys first: ↑/↓ pick a candidate, ←/→ step. Tab reaches the heatmap.
    AUTO_FOCUS = "#dist"
    TITLE = "tt inspect"
    # The help screen (?) is built from these: the tooltip is the line it shows.
    BINDINGS = [
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
        Binding("g", "view('toggle_grid')", "grid", tooltip="grid: every layer × head for the selected query"),
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
        Binding("question_mark", "help", "help", tooltip="this help"),
        Binding("q", "quit", "quit", tooltip="quit"),
    ]

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
        self.set_reactive(InspectApp.view, ViewState.for_dims(self.session.dims, top_k=top_k))
        self.pending = 0  # jobs queued for the model thread; tests and benchmarks wait for 0
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._beam_asked = False
        self._explaining: tuple[Decoding, Cell] | None = None  # the last explanation asked for
        self._views_drawn: Decoding | None = None  # the decoding the masks and positions screen shows
        # model results kept for what they were made from (tt_cli/tui/kept.py)
        self.attributed, self.lensed, self.sinks = Kept(), Kept(), Kept()
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

    def watch_beam_steps(self) -> None:
        self._draw_beam()

    def watch_explained(self) -> None:
        self._draw_explanation()

    def _draw_beam(self) -> None:
        self.query_one(BeamView).show(
            self.beam_steps, self.view.beam_index, self.tokenizer, beam_size=self.beam_size, alpha=self.alpha
        )

    def _draw_explanation(self) -> None:
        ex, note = self.explained or (None, "")
        self.query_one(ExplainView).show(ex, note, self.view.cell[1])

    def _draw_heatmap(self) -> None:
        d, method = self.decoding, self.view.attribution
        if d is None:
            return
        if method is not None:
            self.query_one(Heatmap).show(attribution_picture(d, self._attribution(), method))
        else:
            self.query_one(Heatmap).show(
                picture(self.view, d, self.rule, self.ranking, self._grid_sinks(), self._full_cross())
            )

    def _full_cross(self):
        """The decoding so far re-read without the look-ahead mask, when the links view needs it (else None)."""
        d, v = self.decoding, self.view
        if not (self.rule.full_context and v.links and v.family == "cross" and not v.grid and d.steps):
            return None
        from core.align.links import full_context_cross

        model, tokens = self.loaded.model, (tuple(d.source.tokens), tuple(s.token for s in d.steps))
        return self.reread.get(
            tokens, lambda: full_context_cross(model, *map(list, tokens)), self._draw_heatmap, self.submit
        )

    def _draw_cell(self) -> None:
        """The line under the heatmap that reads out the selected cell."""
        d, data, (row, col) = self.decoding, self.query_one(Heatmap).data, self.view.cell
        if self.view.attribution is not None:
            attr = self._attribution()
            if d is not None and attr is not None and row < len(data.rows) and col < len(data.cols):
                self.query_one("#cell", Static).update(attribution_text(attr, d, row, col), layout=False)
            return
        cell = self.view.selected(len(d.steps), len(d.source.tokens)) if d is not None else None
        if cell is not None and row < len(data.matrix) and col < len(data.cols):
            self.query_one("#cell", Static).update(cell_text(cell, data, d, row), layout=False)

    def _draw_distribution(self) -> None:
        step = self.decoding.steps[-1] if self.decoding is not None and self.decoding.steps else None
        candidates = self.view.candidates(step, self.tokenizer) if step else []
        self.query_one(Distribution).show(step, candidates, temperature=self.view.temperature, top_k=self.view.top_k)

    # ------------------------------------------------------------------------------ the selected cell
    @on(Heatmap.CellSelected)
    def cell_selected(self, event: Heatmap.CellSelected) -> None:
        self.view = self.view.select(event.row, event.col)
        if self.view.mode == "explain":
            self._explain()

    def _explain(self) -> None:
        d = self.decoding
        cell = self.view.selected(len(d.steps), len(d.source.tokens)) if d is not None else None
        if cell is None or (self._explaining is not None and self._explaining[0] is d and self._explaining[1] == cell):
            return  # a redraw re-selects the same cell; its explanation is asked for already
        self._explaining = (d, cell)
        self.submit(lambda: self.session.explain(d, cell), lambda ex: setattr(self, "explained", (ex, cell.note)))

    # ------------------------------------------------------------------------------ actions: keys -> state
    def _move(self, beam_step: Callable[[int], int], decode: Callable[[Session | TraceSession], Decoding]) -> None:
        """n/p/r/0 walk the beam steps in beam mode (once there are some), else the decoding."""
        if self.view.mode == "beam" and self.beam_steps:
            self.view = self.view.beam_at(beam_step(self.view.beam_index), len(self.beam_steps))
        elif self.decoding is not None:
            self.submit(lambda: decode(self.session), self._decoded)

    def action_next(self) -> None:
        self._move(lambda i: i + 1, methodcaller("step"))

    def action_back(self) -> None:
        self._move(lambda i: i - 1 if i > 0 else 0, methodcaller("back"))

    def action_run(self) -> None:
        self._move(lambda i: -1, methodcaller("run"))

    def action_restart(self) -> None:
        self._move(lambda i: 0, methodcaller("restart"))

    def action_view(self, change: str, *args: Any) -> None:
        """A key that only changes what is shown: `change` names the pure ViewState method."""
        self.view = getattr(self.view, change)(*args)

    def live(self, what: str) -> bool:
        """Whether a model runs behind the view; if not, say politely that `what` needs one."""
        if not self.session.live:
            self.notify(str(self.session.needs_model(what)), title="tt")
        return self.session.live

    def action_mode(self, mode: str) -> None:
        if not self.live({"beam": "beam mode", "explain": "explain mode", "lens": "the logit lens"}[mode]):
            return
        self.view = self.view.toggle_mode(mode)
        if self.view.mode == "explain":
            self._explain()
        if self.view.mode == "beam" and not self._beam_asked and self.decoding is not None:
            self._beam_asked = True
            self.submit(
                lambda: self.session.beam(self.beam_size, self.alpha), lambda steps: setattr(self, "beam_steps", steps)
            )

    @on(OptionList.OptionSelected, "#dist")
    def candidate_chosen(self, event: OptionList.OptionSelected) -> None:
        self.what_if(int(event.option.id))

    def what_if(self, token: int) -> None:
        """Take `token` instead at the current step and decode on from there (a branch)."""
        d = self.decoding
        if d is None or not d.steps or not self.live("what-if"):
            return
        if token == d.steps[-1].token:
            self.notify("that is the piece already chosen at this step")
            return
        at = len(d.steps) - 1  # the step on screen, even if more are queued
        self.submit(lambda: self.session.what_if(at, token), self._decoded)

    def action_what_if(self) -> None:
        d = self.decoding
        if d is None or not d.steps or not self.live("what-if"):
            return

        def forced(typed: str | None) -> None:
            if typed is None:
                return
            token = find_piece(self.loaded.tokenizer, typed, self.loaded.cfg.unk_id)
            if token is None:
                self.notify(f"“{typed}” is not a piece of this model's vocabulary", severity="error")
            else:
                self.what_if(token)

        question = f"Piece to force at step {len(d.steps) - 1} (instead of {label(d.steps[-1].piece, 14)}):"
        self.push_screen(AskScreen(question), forced)

    def action_head_off(self) -> None:
        if self.decoding is None or not self.live("switching a head off"):
            return
        view = self.view.toggle_head_off()
        if view is self.view:
            self.notify("pick one head first (h, or a row of the grid g): the mean of heads is not one head")
            return
        self.view, heads = view, view.heads_off
        self.submit(lambda: self.session.heads_off(heads), self._decoded)

    def action_drop_branch(self) -> None:
        if self.decoding is not None:
            self.submit(self.session.drop_branch, self._decoded)

    def action_views(self) -> None:
        d = self.decoding
        if d is None or not self.live("the masks and positions view"):
            return
        ids, pieces = d.mask_inputs()

        def show(positions: tuple) -> None:
            table, kind = positions
            shown = MasksAndPositions(ids, pieces, self.loaded.cfg.pad_id, table, kind, d.source.pieces)
            # Built once and kept (installed), redrawn for a new step or sentence only: composing
            # and mounting a new screen cost ~50 ms of CPU a press (bench/bench_tui_toggle.py).
            if not self.is_screen_installed("views"):
                self.install_screen(ViewsScreen(shown), "views")
            elif self._views_drawn is not d:
                self.get_screen("views").show(shown)
            self._views_drawn = d
            self.push_screen("views")

        self.submit(lambda: self.session.positions(len(d.source.tokens)), show)

    def action_insides(self) -> None:
        from tt_cli.tui.views.screen import open_insides

        open_insides(self)

    def action_help(self) -> None:
        # Built once and kept (installed): the bindings never change, and composing and laying out
        # its table again cost ~100 ms a time (bench/bench_tui_toggle.py).
        if not self.is_screen_installed("help"):
            self.install_screen(
                HelpScreen(
                    [
                        ("", self.BINDINGS),
                        ("in the heatmap", Heatmap.BINDINGS),
                        ("in the candidates list", Distribution.BINDINGS),
                    ]
                ),
                "help",
            )
        self.push_screen("help")

    def action_save_svg(self) -> Path:
        path = self.svg_dir / f"tt-inspect-{time.strftime('%Y%m%d-%H%M%S')}.svg"
        atomic_write_bytes(path, self.export_screenshot().encode("utf-8"))
        self.notify(f"saved {path}")
        return path

    # ------------------------------------------------------------------ the analysis views
    # Attribution in the heatmap (i), the logit lens panel (y), reference mode (--ref, c), sink
    # marks in the grid and the checkpoint scrubber (--run, [ and ]): a key changes the ViewState or
    # asks the model thread, and the answer comes back to a draw method; results are kept in `Kept`s.

    def compare(self, reference: str) -> None:
        """Teacher-force `reference` on the model thread, then show reference mode."""
        self.reference = reference
        self.submit(lambda: self.session.reference(reference), lambda c: setattr(self, "compared", c))

    def watch_compared(self) -> None:
        self.view = self.view.toggle_mode("ref") if self.view.mode != "ref" else self.view
        self.query_one(SentenceView).show(self.decoding, self.compared)
        self._draw_reference()

    def _draw_reference(self) -> None:
        d = self.decoding
        self.query_one(ReferenceView).show(self.compared, len(d.steps) - 1 if d is not None and d.steps else None)

    def _grid_sinks(self) -> dict[Head, list[str]]:
        """The heads that park their attention, for the grid; asked for once per sentence (and reference)."""
        if not self.view.grid or not self.session.live:
            return {}
        key, ref = (self.decoding.source.text, self.reference), self.reference
        return self.sinks.get(key, lambda: self.session.sinks(ref), self._draw_heatmap, self.submit) or {}

    def _attribution(self) -> Attribution | None:
        """The attribution of the decoding on screen, or None while the model thread computes it."""
        d, method = self.decoding, self.view.attribution
        if d is None or method is None or not d.steps:
            return None
        return self.attributed.get(
            (d, method), lambda: self.session.attribute(d, method), self._redraw_attribution, self.submit
        )

    def _redraw_attribution(self) -> None:
        self._draw_heatmap()
        self._draw_cell()

    def _draw_lens(self) -> None:
        d = self.decoding
        if self.view.mode == "lens" and d is not None and d.steps:
            steps = self.lensed.get(d, lambda: self.session.lens(d, 5), self._draw_lens, self.submit)
            self.query_one(LensView).show(steps[-1] if steps else None)

    def action_reference(self) -> None:
        """Reference mode; without a reference yet, ask for one."""
        if not self.live("reference mode") or self.decoding is None:
            return
        if self.compared is not None:
            self.view = self.view.toggle_mode("ref")
            return
        self.push_screen(
            AskScreen("Reference translation (English), teacher-forced step by step:"),
            lambda ref: None if not ref or not ref.strip() else self.compare(ref.strip()),
        )

    def action_checkpoint(self, delta: int) -> None:
        if not isinstance(self.session, ScrubSession):
            self.notify('[ and ] move across a run\'s checkpoints: start with tt inspect --run runs/NAME "…"')
            return
        session = self.session

        def moved(d: Decoding) -> None:
            self.about = f"run {self.run_name or '?'} · {session.where} · [ ] move across checkpoints"
            self.decoding = d

        self.submit(lambda: session.checkpoint_by(delta), moved)

    def action_attribution(self) -> None:
        if self.view.attribution is None and not self.live("attribution"):
            return
        self.view = self.view.next_attribution()


def make_app(loaded: LoadedModel | None, text: str | None = None, **options: Any) -> InspectApp:
    """The app without the CLI around it: tests and benchmarks build it this way."""
    return InspectApp(loaded, text, **options)
