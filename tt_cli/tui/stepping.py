"""The decoding view of `tt inspect`: stepping, the heatmap and its selected cell, the candidates,
what-if branches and heads switched off.

A part of the one InspectApp (tt_cli/tui/app.py), which it is mixed into: it reads the App's
reactives (`view`, `decoding`), `session` and `submit` (the model thread), and draws the widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import methodcaller
from typing import Any

from textual.widgets import Static

from tt_cli.tui.picture import attribution_picture, attribution_text, cell_text, picture
from tt_cli.tui.screens.ask import AskScreen
from tt_cli.tui.session import Decoding, Session, TraceSession, find_piece
from tt_cli.tui.widgets.distribution import Distribution
from tt_cli.tui.widgets.heatmap import Heatmap, label


class Stepping:
    # ------------------------------------------------------------------------------ drawing
    def _draw_heatmap(self) -> None:
        d, method = self.decoding, self.view.attribution
        if d is None:
            return
        if method is not None:
            self.query_one(Heatmap).show(attribution_picture(d, self._attribution(), method))
        else:
            self.query_one(Heatmap).show(
                picture(
                    self.view, d, self.rule, self.ranking, self._grid_sinks(), self._full_cross(), self._grid_kinds()
                )
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

        question = f"Piece to force at step {len(d.steps)} (instead of {label(d.steps[-1].piece, 14)}):"
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
