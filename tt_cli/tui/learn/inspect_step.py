"""Leave the lesson into `tt inspect`, opened on the view a step is about.

The lesson names each step's view (`Step.view`); here it becomes what a learner would otherwise
press in `tt inspect`: decode the sentence to the end, then pick the family, the grid, explain or
beam mode, the masks screen or a tab of the insides screen. The opening keys are pressed by the app itself once
the sentence is decoded, so the learner lands in the ordinary `tt inspect`, keys and all.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from core.checkpoint import LoadedModel
from core.learn.live import Matrix
from core.learn.steps import Step
from tt_cli.tui import app as inspect_app
from tt_cli.tui.app import InspectApp
from tt_cli.tui.session import Decoding
from tt_cli.tui.views.screen import open_insides

# What each view of the lesson opens in tt inspect, as the actions its keys run ("insides:TAB" is a
# tab of the insides screen, key v).
OPENINGS: dict[str, tuple[str, ...]] = {
    "cross": (),
    "contextual": ("insides:contextual",),
    "explain": ("explain",),
    "grid:encoder_self": ("family:encoder_self", "grid"),
    "heads:encoder_self": ("family:encoder_self",),
    "scaling": ("insides:scaling",),
    "shapes": ("insides:shapes",),
    "positions": ("insides:positions",),
    "embed_position": ("insides:embedding",),
    "add_norm": ("insides:add_norm",),
    "ffn": ("insides:ffn",),
    "masks": ("views",),
    "explain:cross": ("explain",),
    "candidates": (),
    "reference": (),  # the reference comes with the sentence: reference mode opens by itself
    "beam": ("beam",),
}


def split_sentence(sentence: str) -> tuple[str, str | None]:
    """A step's sentence: "source" or "source | second" (a reference, or a second sentence to compare)."""
    first, _, second = sentence.partition("|")
    return first.strip(), second.strip() or None


class StepInspectApp(InspectApp):
    """`tt inspect` on a step's sentence that, once decoded, opens the step's view."""

    # Textual reads a relative CSS_PATH beside the class's own module: name tt inspect's theme.
    CSS_PATH = Path(inspect_app.__file__).parent / InspectApp.CSS_PATH

    def __init__(self, loaded: LoadedModel, step: Step, *, select: Matrix | None = None, **options: Any) -> None:
        """`select`: the attention table the step showed; inspect opens on its family, layer and head."""
        text, second = split_sentence(step.sentence)
        reference = second if step.view == "reference" else None
        super().__init__(loaded, text, reference=reference, **options)
        self.opening = OPENINGS[step.view]
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
        for action in self.opening:
            if action.startswith("family:"):
                while self.view.family != action.split(":", 1)[1]:
                    self.view = self.view.next_family()
            elif action == "grid":
                self.view = self.view.toggle_grid()
            elif action == "views":
                self.action_views()
            elif action.startswith("insides:"):
                open_insides(self, tab=action.split(":", 1)[1])
            else:
                self.action_mode(action)
        if self.select is not None:
            m = self.select
            self.view = replace(self.view, family=m.family, layer=m.layer, head=m.head)


def inspect_app_for(loaded: LoadedModel, step: Step, **options: Any) -> StepInspectApp:
    return StepInspectApp(loaded, step, **options)
