"""The analysis views of `tt inspect`: attribution in the heatmap (i), the logit lens panel (y),
reference mode (--ref, c), sink and pattern-kind marks in the grid and the checkpoint scrubber
(--run, [ and ]).

A key changes the ViewState or asks the model thread, and the answer comes back to a draw method;
results are kept in `Kept`s (tt_cli/tui/kept.py). A part of the one InspectApp (tt_cli/tui/app.py),
which it is mixed into.
"""

from __future__ import annotations

from core.analysis.attribute import Attribution
from core.analysis.patterns import PATTERN_FAMILIES, HeadKind
from core.model.attention import Head
from tt_cli.tui.kept import Same
from tt_cli.tui.screens.ask import AskScreen
from tt_cli.tui.session import Decoding, ScrubSession
from tt_cli.tui.widgets.lens import LensView
from tt_cli.tui.widgets.reference import ReferenceView
from tt_cli.tui.widgets.sentence import SentenceView


class AnalysisViews:
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

    def _grid_kinds(self) -> dict[Head, HeadKind]:
        """Each self-attention head's pattern kind, for the grid: asked for once per sentence (and
        reference, and checkpoint of a run), live or from a replayed trace's own weights."""
        d, ref = self.decoding, self.reference
        if not self.view.grid or self.view.family not in PATTERN_FAMILIES or d is None:
            return {}
        key = (Same(d.source), ref)
        return self.kinds.get(key, lambda: self.session.kinds(ref), self._draw_heatmap, self.submit) or {}

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
        """Attention → the attributions there are (live: input×gradient, integrated gradients; a
        replayed trace: the one it holds) → attention."""
        if not self.session.attributions:
            self.live("attribution")  # says why nothing happens
            return
        self.view = self.view.next_attribution(self.session.attributions)
