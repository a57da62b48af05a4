"""The sentence being decoded: source pieces, the output so far (current step marked), and a branch."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from core.decode.stepper import Stepper
from tt_cli.tui.widgets.heatmap import label


def pieces_line(name: str, pieces: list[str], *, current: int | None = None, forced: set[int] | None = None) -> Text:
    text = Text()
    text.append(f"{name:>8} ", style="bold")
    for i, piece in enumerate(pieces):
        style = "bold black on yellow" if i == current else ("bold magenta" if forced and i in forced else "")
        text.append(label(piece, 14), style=style)
        text.append(" ")
    return text


class SentenceView(Static):
    DEFAULT_CSS = """
    SentenceView { height: auto; padding: 0 1; }
    """

    def show(self, original: Stepper | None, branch: Stepper | None = None, *, active_is_branch: bool = False) -> None:
        if original is None:
            self.update(Text("type a French sentence to inspect", style="dim italic"))
            return
        lines = [pieces_line("source", original.source.pieces)]
        for name, stepper, active in (("output", original, not active_is_branch), ("what-if", branch, active_is_branch)):
            if stepper is None:
                continue
            steps = stepper.steps
            current = len(steps) - 1 if active and steps else None
            line = pieces_line(name, [s.piece for s in steps], current=current, forced={s.index for s in steps if s.forced})
            lines.append(line)
            status = "done" if stepper.finished else f"step {len(steps)}/{stepper.limit}"
            summary = Text(" " * 9)
            summary.append(f"“{stepper.output_text}”", style="italic green" if active else "italic")
            summary.append(f"  {status} · log p {stepper.score:.2f}", style="dim")
            lines.append(summary)
        self.update(Group(*lines))
