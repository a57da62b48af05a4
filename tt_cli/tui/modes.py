"""The right-hand panel's beam and explain modes, and what opens over the view: the masks and
positions screen, the help screen, the screenshot and the figures.

A part of the one InspectApp (tt_cli/tui/app.py), which it is mixed into: it reads the App's
reactives (`view`, `decoding`, `beam_steps`, `explained`), `session` and `submit` (the model thread).
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

from textual.actions import parse
from textual.binding import Binding
from textual.dom import DOMNode

from core.errors import OutputError, TTError
from core.files import atomic_write_bytes
from tt_cli.tui.screens.help import HelpScreen
from tt_cli.tui.screens.views import MasksAndPositions, ViewsScreen
from tt_cli.tui.widgets.beam import BeamView
from tt_cli.tui.widgets.distribution import Distribution
from tt_cli.tui.widgets.explain import ExplainView
from tt_cli.tui.widgets.heatmap import Heatmap


def free_path(folder: Path, stem: str, suffix: str) -> Path:
    """folder/stem+suffix, else stem-2, stem-3 …: the first name no file has, taken on the spot
    (O_EXCL), so two presses in one second, or two tt inspect at once, never write over each other."""
    for n in itertools.count(1):
        path = folder / f"{stem}{'' if n == 1 else f'-{n}'}{suffix}"
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        return path
    raise AssertionError("unreachable")


def usable(node: DOMNode, bindings: list[Binding]) -> list[Binding]:
    """The bindings whose action `node` allows: the help lists no key that the footer hides."""
    return [b for b in bindings if node.check_action(*parse(b.action)[1:]) is not False]


class Modes:
    # ------------------------------------------------------------------------------ beam and explain
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

    def _explain(self) -> None:
        d = self.decoding
        cell = self.view.selected(len(d.steps), len(d.source.tokens)) if d is not None else None
        if cell is None or (self._explaining is not None and self._explaining[0] is d and self._explaining[1] == cell):
            return  # a redraw re-selects the same cell; its explanation is asked for already
        self._explaining = (d, cell)
        self.submit(lambda: self.session.explain(d, cell), lambda ex: setattr(self, "explained", (ex, cell.note)))

    # ------------------------------------------------------------------------------ over the view
    def action_insides(self) -> None:
        from tt_cli.tui.views.screen import open_insides

        open_insides(self)

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

    def action_help(self) -> None:
        # Built once and kept (installed): the bindings never change, and composing and laying out
        # its table again cost ~100 ms a time (bench/bench_tui_toggle.py).
        if not self.is_screen_installed("help"):
            self.install_screen(
                HelpScreen(
                    [
                        ("", usable(self, self.BINDINGS)),
                        ("in the heatmap", usable(self.query_one(Heatmap), Heatmap.BINDINGS)),
                        ("in the candidates list", usable(self.query_one(Distribution), Distribution.BINDINGS)),
                    ]
                ),
                "help",
            )
        self.push_screen("help")

    def action_save_figures(self) -> None:
        """The attention map of the view's family, layer and head, and the shown distribution of the
        step on screen, as figures (matplotlib) in --svg-dir; written on the model thread."""
        from tt_cli.figures import attention_figure, distribution_figure, require, save

        d, view = self.decoding, self.view
        try:
            require("key S")
        except TTError as exc:
            self.notify(str(exc), severity="error", title="tt")
            return
        if d is None or not d.steps:
            self.notify("no decoding step yet: n takes one", title="tt")
            return
        steps, step = list(d.steps), d.steps[-1]
        figures = {
            "attention": lambda: attention_figure(d.source, steps, view.family, view.layer, view.head),
            "distribution": lambda: distribution_figure(step, view.candidates(step, self.tokenizer)),
        }
        stem, suffix = f"tt-inspect-{time.strftime('%Y%m%d-%H%M%S')}", "." + self.figure_format

        def write() -> list[Path]:
            written = []
            for kind, make in figures.items():
                try:
                    path = free_path(self.svg_dir, f"{stem}-{kind}", suffix)
                except OSError as exc:
                    raise OutputError(f"figures not saved: {exc}") from None
                try:
                    written.append(save(make(), path))
                except BaseException:
                    path.unlink(missing_ok=True)  # the name it held
                    raise
            return written

        self.submit(write, lambda paths: self.notify("saved " + " and ".join(str(p) for p in paths)))

    def action_save_svg(self) -> Path | None:
        svg = self.export_screenshot().encode("utf-8")
        try:
            path = free_path(self.svg_dir, f"tt-inspect-{time.strftime('%Y%m%d-%H%M%S')}", ".svg")
            try:
                atomic_write_bytes(path, svg)
            except OSError:
                path.unlink(missing_ok=True)  # the name it held
                raise
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc}", severity="error", title="tt")
            return None
        self.notify(f"saved {path}")
        return path
