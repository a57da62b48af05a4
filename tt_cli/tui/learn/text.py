"""A lesson step as Rich text: the notes' idea and formula, their toy on tt's code, the live numbers.

The same parts, in the same order, as `core.learn.steps.render_plain` prints for a pipe; here with
styles, and built as `Text` (never markup) so that the numbers' brackets stay numbers.
"""

from __future__ import annotations

from rich.text import Text

from core.learn.lesson import Step, toy_heading
from core.learn.steps import STEPS


def lesson_text(s: Step) -> Text:
    """The left panel: idea, formula, the toy example computed by tt (the notes' or tt's), where a note is wrong."""
    out = Text()
    out.append(" ".join(s.idea) + "\n\n")  # one paragraph: the panel wraps it to its width
    out.append(f"    {s.formula}\n", style="bold")
    if s.toy is not None:
        out.append(f"\n{toy_heading(s)}\n", style="underline")
        for label, value in s.toy():
            out.append(f"  {label}: ", style="dim")
            out.append(f"{value}\n")
    for slip in s.slips:
        out.append(f"\nWhere a note is wrong — {slip.note}\n", style="bold red")
        out.append("  it says: ", style="dim")
        out.append(f"{slip.says}\n")
        out.append("  right:   ", style="dim")
        out.append(f"{slip.right}\n", style="green")
        out.append("  why:     ", style="dim")
        out.append(f"{slip.why}\n")
    return out


def live_text(s: Step, lines: list[tuple[str, str]] | None, sentence: str) -> Text:
    """The right panel's numbers: computed on the model, or a line saying they are on their way."""
    out = Text()
    out.append("On the live model: ", style="bold")
    out.append(f"{sentence}\n")
    if s.look:
        out.append(f"{s.look}\n", style="italic")
    out.append("\n")
    if lines is None:
        out.append("computing…", style="italic dim")
        return out
    width = min(34, max(len(label) for label, _ in lines)) if lines else 0
    for label, value in lines:
        out.append(f"{label:<{width}}  ", style="dim")
        out.append(f"{value}\n")
    return out


def progress_text(index: int) -> Text:
    """The title bar: where the learner is, as a number and as a row of dots."""
    s = STEPS[index]
    out = Text()
    out.append(f"Step {index + 1}/{len(STEPS)} · ", style="bold")
    out.append(s.title, style="bold")
    out.append("   " + "".join("●" if i == index else "·" for i in range(len(STEPS))))
    return out
