"""The next-token distribution at one step: top-k pieces with probability bars, the chosen one marked.

An OptionList, so a reader can move to any candidate and press Enter to ask "what if the model had
said this instead?" (the app branches decoding there).
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.binding import Binding
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.decode.trace import Candidate, StepTrace
from tt_cli.tui.widgets.heatmap import label

BAR = 16


def bar(prob: float, width: int = BAR) -> str:
    eighths = round(max(0.0, min(prob, 1.0)) * width * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + ("▏▎▍▌▋▊▉"[rest - 1] if rest else "")).ljust(width)


class Distribution(OptionList):
    DEFAULT_CSS = """
    Distribution { height: 1fr; }
    """
    BINDINGS = [
        # OptionList's home (first candidate) would hide the app's restart key, which the help promises
        Binding("home", "app.restart", "restart", show=False, tooltip="restart from the first step"),
        Binding(
            "enter",
            "select",
            "what-if",
            show=False,
            tooltip="what-if: continue decoding from the highlighted candidate",
        ),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter on a candidate is a what-if: hidden, as the app's w is, where no model runs."""
        return self.app.check_action("what_if", ()) if action == "select" else True

    _shown: tuple = (None, [], 1.0, 10)  # the last show's arguments, drawn again at a new width

    def on_resize(self) -> None:
        step, candidates, temperature, top_k = self._shown
        self.show(step, candidates, temperature=temperature, top_k=top_k)

    def bar_width(self) -> int:
        """The bars take what the marker, rank, piece and percentage (23 columns) and a scrollbar leave."""
        width = self.content_size.width
        return BAR if width == 0 else max(4, min(BAR, width - 23 - 2))

    def show(self, step: StepTrace | None, candidates: list[Candidate], *, temperature: float, top_k: int) -> None:
        self._shown = (step, candidates, temperature, top_k)
        self.border_title = f"next piece · top-{top_k} · temp {temperature:.2f}"
        highlighted = self.highlighted
        self.clear_options()
        if step is None:
            self.border_subtitle = "no step yet"
            return
        self.border_subtitle = f"step {step.index + 1} chose {label(step.piece, 12)}" + (
            " (forced)" if step.forced else ""
        )
        options, width = [], self.bar_width()
        for rank, c in enumerate(candidates, 1):
            chosen = c.token == step.token
            text = Text()
            text.append("▶ " if chosen else "  ", style="bold yellow")
            text.append(f"{rank:>2} {label(c.piece, 10):<11}", style="bold" if chosen else "")
            text.append(bar(c.prob, width), style="green" if chosen else "cyan")
            text.append(f" {c.prob:6.1%}")
            options.append(Option(text, id=str(c.token)))
        if step.token not in {c.token for c in candidates}:
            # A forced piece outside the top-k is still shown, below the list, so the mark never vanishes.
            text = Text()
            text.append("▶  · ", style="bold yellow")
            text.append(f"{label(step.piece, 10):<11}", style="bold")
            text.append(f"{' ' * width} p={math.exp(step.logprob):.1%} (model)")
            options.append(Option(text, id=str(step.token)))
        self.add_options(options)
        if options:
            self.highlighted = min(highlighted or 0, len(options) - 1)
