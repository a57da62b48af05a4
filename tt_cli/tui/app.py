"""`tt inspect`: step through the greedy decoding of one sentence and read everything it used.

A thin App: it owns the `Stepper` (core.decode.stepper) and which view is asked for (family, layer, head,
mode); the widgets in tt_cli/tui/widgets only draw what they are handed. Model work runs on ONE
worker thread, in the order the keys were pressed, and reports back with `call_from_thread`.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import ContentSwitcher, Footer, OptionList, Static
from textual.worker import get_current_worker

from core.analysis.explain import FAMILIES, Explanation, explain
from core.checkpoint import LoadedModel
from core.decode.stepper import Stepper
from core.errors import TTError
from core.files import atomic_write_bytes
from tt_cli.tui.picture import picture
from tt_cli.tui.widgets.ask import AskScreen
from tt_cli.tui.widgets.beam import BeamView
from tt_cli.tui.widgets.distribution import Distribution
from tt_cli.tui.widgets.explain import ExplainView
from tt_cli.tui.widgets.heatmap import Heatmap, label
from tt_cli.tui.widgets.help import HelpScreen
from tt_cli.tui.widgets.sentence import SentenceView
from tt_cli.tui.widgets.views import ViewsScreen


class InspectApp(App[None]):
    CSS_PATH = "app.tcss"
    # The candidates list takes the keys first: ↑/↓ pick a candidate, ←/→ step. Tab reaches the heatmap.
    AUTO_FOCUS = "#dist"
    TITLE = "tt inspect"
    BINDINGS = [
        Binding("n,right", "next", "step"),
        Binding("p,left", "back", "back"),
        Binding("r", "run", "run"),
        Binding("0,home", "restart", "restart", show=False),
        Binding("f", "family", "family"),
        Binding("l", "layer(1)", "layer"),
        Binding("L", "layer(-1)", "layer−", show=False),
        Binding("h", "head(1)", "head"),
        Binding("H", "head(-1)", "head−", show=False),
        Binding("g", "grid", "grid"),
        Binding("t", "temperature(1.25)", "temp+", show=False),
        Binding("T", "temperature(0.8)", "temp−", show=False),
        Binding("k", "top_k(1)", "k+", show=False),
        Binding("K", "top_k(-1)", "k−", show=False),
        Binding("w", "what_if", "what-if"),
        Binding("x", "drop_branch", "drop", show=False),
        Binding("b", "mode('beam')", "beam"),
        Binding("e", "mode('explain')", "explain"),
        Binding("m", "views", "masks"),
        Binding("s", "save_svg", "svg"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self, loaded: LoadedModel, text: str | None = None, *, top_k: int = 10, beam_size: int = 4,
        alpha: float = 0.6, svg_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.loaded, self.text = loaded, text
        self.cfg = loaded.cfg
        self.original: Stepper | None = None
        self.branch: Stepper | None = None
        self.family, self.layer, self.head = "cross", 0, None  # head None = the mean of the heads
        self.grid, self.mode = False, "dist"
        self.temperature, self.top_k = 1.0, top_k
        self.beam_size, self.alpha, self.beam, self.beam_index = beam_size, alpha, None, 0
        self.explanation: Explanation | None = None
        self._explained: tuple | None = None  # which cell `explanation` is for
        self.explain_note = ""
        self.enc_query = 0  # the source position the encoder grid shows
        self.svg_dir = svg_dir or Path.cwd()
        self.pending = 0  # jobs queued for the model thread; tests wait for 0
        self._jobs: queue.Queue[tuple[Callable[[], Any], Callable[[Any], None]]] = queue.Queue()

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
        yield Footer()

    def on_mount(self) -> None:
        self.model_thread()
        if self.text:
            self.start(self.text)
        else:
            self.push_screen(AskScreen("Sentence to translate and inspect (French):", "Je suis étudiant."), self._asked)
        self.refresh_views()

    def _asked(self, text: str | None) -> None:
        if text is None:
            self.exit()
        else:
            self.start(text)

    @property
    def active(self) -> Stepper | None:
        return self.branch or self.original

    # ------------------------------------------------------------------------------ model thread
    @work(thread=True, group="model")
    def model_thread(self) -> None:
        """Run queued model jobs one at a time, in order; results go back to the UI thread."""
        worker = get_current_worker()
        while not worker.is_cancelled:
            try:
                job, then = self._jobs.get(timeout=0.05)
            except queue.Empty:
                continue
            try:
                result = job()
            except TTError as exc:
                self.call_from_thread(self._failed, str(exc))
                continue
            self.call_from_thread(self._done, then, result)

    def submit(self, job: Callable[[], Any], then: Callable[[Any], None] | None = None) -> None:
        self.pending += 1
        self._jobs.put((job, then or (lambda _: None)))

    def _done(self, then: Callable[[Any], None], result: Any) -> None:
        self.pending -= 1
        then(result)
        self.refresh_views()

    def _failed(self, message: str) -> None:
        self.pending -= 1
        self.notify(message, severity="error", title="tt")

    def start(self, text: str) -> None:
        def make() -> Stepper:
            stepper = Stepper(self.loaded, text, top_k=self.top_k)
            stepper.step()
            return stepper

        def ready(stepper: Stepper) -> None:
            self.original, self.branch, self.beam = stepper, None, None

        self.submit(make, ready)

    # ------------------------------------------------------------------------------ drawing
    def n_layers(self) -> int:
        return self.cfg.n_encoder_layers if self.family == "encoder_self" else self.cfg.n_decoder_layers

    def refresh_views(self) -> None:
        s = self.active
        where = "what-if branch" if self.branch else "greedy"
        self.query_one("#title", Static).update(
            f"[b]tt inspect[/b] · {self.loaded.path.name} · d_model {self.cfg.d_model}, h {self.cfg.h}, "
            f"{self.cfg.n_encoder_layers}+{self.cfg.n_decoder_layers} layers · {where} · ? for help"
        )
        self.query_one(SentenceView).show(self.original, self.branch, active_is_branch=self.branch is not None)
        self.query_one(ContentSwitcher).current = self.mode
        if s is None:
            return
        self.query_one(Heatmap).show(
            picture(s, self.family, self.layer, self.head, grid=self.grid, enc_query=self.enc_query)
        )
        step = s.steps[-1] if s.steps else None
        candidates = s.candidates(step, top_k=self.top_k, temperature=self.temperature) if step else []
        self.query_one(Distribution).show(step, candidates, temperature=self.temperature, top_k=self.top_k)
        if self.mode == "beam":
            self.query_one(BeamView).show(self.beam, self.beam_index, s.tokenizer, beam_size=self.beam_size, alpha=self.alpha)
        if self.mode == "explain":
            key = self.query_one(Heatmap).cursor[1]
            self.query_one(ExplainView).show(self.explanation, self.explain_note, key)

    # ------------------------------------------------------------------------------ the selected cell
    def selected(self) -> tuple[str, int, int | None, int, int] | None:
        """(family, layer, head, query, key) of the heatmap's cursor; head None = the mean."""
        s = self.active
        heatmap = self.query_one(Heatmap)
        if s is None or not heatmap.data.rows:
            return None
        row, col = heatmap.cursor
        if self.grid:
            query = min(self.enc_query, len(s.source.tokens) - 1) if self.family == "encoder_self" else len(s.steps) - 1
            return self.family, row // self.cfg.h, row % self.cfg.h, query, col
        if self.family != "encoder_self" and row >= len(s.steps):
            return None  # a cursor from before a step back: the next refresh brings a fresh one
        return self.family, self.layer, self.head, row, col

    @on(Heatmap.CellSelected)
    def cell_selected(self, event: Heatmap.CellSelected) -> None:
        sel, s = self.selected(), self.active
        data = self.query_one(Heatmap).data
        if sel is None or event.row >= len(data.matrix) or event.col >= len(data.cols):
            return
        family, layer, head, query, key = sel
        if family == "encoder_self" and not self.grid:
            self.enc_query = query
        q_piece = s.source.pieces[query] if family == "encoder_self" else f"step {query} ({label(s.steps[query].piece, 12)})"
        weight = data.matrix[event.row][event.col]
        self.query_one("#cell", Static).update(
            f"weight [b]{weight:.4f}[/b] · layer {layer} · {'mean of heads' if head is None else f'head {head}'}\n"
            f"query {q_piece} → key {label(data.cols[key], 14)} (position {key})"
        )
        if self.mode == "explain":
            self.query_one(ExplainView).show(self.explanation, self.explain_note, key)
            self.explain_selected()

    def explain_selected(self) -> None:
        sel, s = self.selected(), self.active
        if sel is None:
            return
        family, layer, head, query, _ = sel
        key = (id(s), len(s.steps), family, layer, head, query)
        if key == self._explained:
            return  # a redraw re-selects the same cell; its explanation is already there
        self._explained = key
        note = "" if head is not None else "(the mean of heads has no single q·k: head 0)"
        if family != "encoder_self":
            note = f"the decoder input that produced step {query}'s piece {note}"
        src, tgt_in = s.source.tokens, s.target_inputs

        def job() -> Explanation:
            return explain(
                s.model, src, tgt_in, family=family, layer=layer, head=head or 0, query=query,
                src_pieces=s.source.pieces, tgt_pieces=s.tokenizer.pieces(tgt_in),
            )

        def show(ex: Explanation) -> None:
            self.explanation, self.explain_note = ex, note

        self.submit(job, show)

    # ------------------------------------------------------------------------------ actions
    def action_next(self) -> None:
        if self.mode == "beam" and self.beam:
            self.beam_index = min(self.beam_index + 1, len(self.beam) - 1)
            self.refresh_views()
        elif (s := self.active) is not None:
            self.submit(lambda: s.step(), self._after_move)

    def action_back(self) -> None:
        if self.mode == "beam" and self.beam:
            self.beam_index = max(self.beam_index - 1, 0)
            self.refresh_views()
        elif (s := self.active) is not None:
            self.submit(lambda: s.back(), self._after_move)

    def action_run(self) -> None:
        if self.mode == "beam" and self.beam:
            self.beam_index = len(self.beam) - 1
            self.refresh_views()
        elif (s := self.active) is not None:
            self.submit(lambda: s.run(), self._after_move)

    def action_restart(self) -> None:
        if self.mode == "beam":
            self.beam_index = 0
            self.refresh_views()
        elif (s := self.active) is not None:
            self.submit(lambda: s.restart(), self._after_move)

    def _after_move(self, _: Any) -> None:
        if self.mode == "explain":
            self.call_after_refresh(self.explain_selected)

    def action_family(self) -> None:
        self.family = FAMILIES[(FAMILIES.index(self.family) + 1) % len(FAMILIES)]
        self.layer = min(self.layer, self.n_layers() - 1)
        self._view_changed()

    def action_layer(self, delta: int) -> None:
        self.layer = (self.layer + delta) % self.n_layers()
        self._view_changed()

    def action_head(self, delta: int) -> None:
        order = [None, *range(self.cfg.h)]
        self.head = order[(order.index(self.head) + delta) % len(order)]
        self._view_changed()

    def action_grid(self) -> None:
        self.grid = not self.grid
        self._view_changed()

    def _view_changed(self) -> None:
        self.refresh_views()
        if self.mode == "explain":
            self.explain_selected()

    def action_temperature(self, factor: float) -> None:
        self.temperature = min(max(self.temperature * factor, 0.05), 20.0)
        self.refresh_views()

    def action_top_k(self, delta: int) -> None:
        self.top_k = min(max(self.top_k + delta, 1), min(50, self.cfg.vocab_size))
        self.refresh_views()

    def action_mode(self, mode: str) -> None:
        self.mode = "dist" if self.mode == mode else mode
        if self.mode == "beam" and self.beam is None and self.original is not None:
            self.beam_index = 0
            self.submit(self._beam_job(self.original), self._beam_ready)
        if self.mode == "explain":
            self.explain_selected()
        self.refresh_views()

    def _beam_job(self, s: Stepper) -> Callable[[], Any]:
        import torch

        from core.analysis.beam import beam_steps

        src = torch.tensor([s.source.tokens], device=s.encoded.memory.device)  # (1, S)
        return lambda: beam_steps(s.model, src, self.beam_size, self.alpha, s.extra_len)

    def _beam_ready(self, steps: list) -> None:
        self.beam = steps

    @on(OptionList.OptionSelected, "#dist")
    def candidate_chosen(self, event: OptionList.OptionSelected) -> None:
        self.what_if(int(event.option.id))

    def what_if(self, token: int) -> None:
        """Take `token` instead at the current step and decode on from there (a branch)."""
        s = self.active
        if s is None or not s.steps:
            return
        at = len(s.steps) - 1
        if token == s.steps[at].token:
            self.notify("that is the piece already chosen at this step")
            return
        original = self.original

        def job() -> Stepper:
            branch = s.branch(at, token)
            original.run()  # the comparison needs the original's whole output
            return branch

        def ready(branch: Stepper) -> None:
            self.branch = branch

        self.submit(job, ready)

    def action_what_if(self) -> None:
        s = self.active
        if s is None or not s.steps:
            return

        def forced(piece: str | None) -> None:
            if piece is None:
                return
            for candidate in (piece, "\u2581" + piece, piece.replace(" ", "\u2581")):
                token = s.tokenizer.piece_id(candidate)
                if token != self.cfg.unk_id or candidate == "<unk>":
                    self.what_if(token)
                    return
            self.notify(f"“{piece}” is not a piece of this model's vocabulary", severity="error")

        self.push_screen(AskScreen(f"Piece to force at step {len(s.steps) - 1} (instead of {label(s.steps[-1].piece, 14)}):"), forced)

    def action_drop_branch(self) -> None:
        self.branch = None
        self.refresh_views()

    def action_views(self) -> None:
        if self.active is not None:
            self.push_screen(ViewsScreen(self.active))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_save_svg(self) -> Path:
        path = self.svg_dir / f"tt-inspect-{time.strftime('%Y%m%d-%H%M%S')}.svg"
        atomic_write_bytes(path, self.export_screenshot().encode("utf-8"))
        self.notify(f"saved {path}")
        return path


def make_app(loaded: LoadedModel, text: str | None = None, **options: Any) -> InspectApp:
    """The app without the CLI around it: tests and benchmarks build it this way."""
    return InspectApp(loaded, text, **options)
