"""Leave the lesson into `tt inspect`, opened on the view a step is about.

Each step says what inspect opens on (`Step.opens`, an `Opening`); here it becomes what a learner would
otherwise press in `tt inspect`: decode the sentence to the end, then pick the family, the grid, explain or
beam mode, the masks screen or a tab of the insides screen. The opening keys are pressed by the app itself once
the sentence is decoded, so the learner lands in the ordinary `tt inspect`, keys and all.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from core.checkpoint import LoadedModel
from core.learn.lesson import Step
from core.learn.live import Matrix
from tt_cli.tui import app as inspect_app
from tt_cli.tui.app import InspectApp
from tt_cli.tui.session import Decoding
from tt_cli.tui.views.screen import open_insides


class StepInspectApp(InspectApp):
    """`tt inspect` on a step's sentence that, once decoded, opens the step's view."""

    # Textual reads a relative CSS_PATH beside the class's own module: name tt inspect's theme.
    CSS_PATH = Path(inspect_app.__file__).parent / InspectApp.CSS_PATH

    def __init__(self, loaded: LoadedModel, step: Step, *, select: Matrix | None = None, **options: Any) -> None:
        """`select`: the attention table the step showed; inspect opens on its family, layer and head."""
        super().__init__(loaded, step.source, reference=step.reference, **options)
        self.opening = step.opens
        self.select = select
        self._stage = "start"  # start → ran (decoded to the end) → open

    def _decoded(self, d: Decoding) -> None:
        super()._decoded(d)
        if self._stage == "start":
            self._stage = "ran"
            self.action_run()
        elif self._stage == "ran":
            self._stage = "open"
            self.call_after_refresh(self._open)

    def _open(self) -> None:
        o = self.opening
        if o.family is not None:
            self.view = self.view.at_family(o.family)
        if o.grid:
            self.view = self.view.toggle_grid()
        if o.views:
            self.action_views()
        if o.insides is not None:
            open_insides(self, tab=o.insides)
        if o.mode is not None:
            self.action_mode(o.mode)
        if self.select is not None:
            m = self.select
            self.view = replace(self.view, family=m.family, layer=m.layer, head=m.head)


def inspect_app_for(loaded: LoadedModel, step: Step, **options: Any) -> StepInspectApp:
    return StepInspectApp(loaded, step, **options)
