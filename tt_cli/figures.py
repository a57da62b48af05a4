"""Figures for a report or a paper, drawn by matplotlib (the figures extra): an attention map with the
pieces on its axes, a step's next-piece distribution as bars, and learning curves.

Each figure is made from the records core returns (SourceTrace and StepTrace, core.train.runs'
panels), on a matplotlib `Figure` of its own (no pyplot and its global state), and written by
`save`: the format from the file's suffix (.png, .svg, .pdf), atomically. SVG keeps its text as
text, so a piece can be searched for, and edited, in the file.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from core.decode.trace import Candidate, SourceTrace, StepTrace
    from core.train.runs import Panel, XAxis

FORMATS = ("png", "svg", "pdf")
INSTALL = "pip install 'tt[figures]' (or pip install matplotlib)"
FAMILY_TITLES = {
    "cross": "cross-attention",
    "decoder_self": "masked decoder self-attention",
    "encoder_self": "encoder self-attention",
}
DPI = 200  # a PNG sharp enough to print


def require(option: str, path: Path | None = None) -> None:
    """A ConfigError, before any work, when matplotlib is missing or `path` names no format it writes."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError(f"{option} needs matplotlib: {INSTALL}")
    if path is not None:
        format_of(path, option)


def format_of(path: Path, option: str = "the figure") -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ConfigError(f"{option} {path}: give a file name ending in .png, .svg or .pdf")
    return suffix


def save(figure: Figure, path: Path, option: str = "the figure") -> Path:
    """Write `figure` to `path` in the format its suffix names, all of it or nothing."""
    import matplotlib

    from core.files import open_output

    fmt = format_of(path, option)
    with matplotlib.rc_context({"svg.fonttype": "none"}), open_output(path, binary=True) as f:
        figure.savefig(f, format=fmt, dpi=DPI, bbox_inches="tight")
    return Path(path)


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


# ------------------------------------------------------------------------------------ decoding
def attention_figure(source: SourceTrace, steps: list[StepTrace], family: str, layer: int, head: int | None) -> Figure:
    """One attention matrix (a head, or the mean of the heads when `head` is None) as a heatmap,
    the query pieces down the side and the key pieces along the bottom, as the model wrote them."""
    from core.decode.trace import attention_labels, attention_matrix

    matrix = attention_matrix(source, steps, family, layer, head).numpy()  # (queries, keys)
    rows, cols = attention_labels(source, steps, family)
    figure = _figure(max(3.0, 0.32 * len(cols) + 1.8), max(2.5, 0.3 * len(rows) + 1.4))
    ax = figure.add_subplot()
    image = ax.imshow(matrix, cmap="Blues", vmin=0.0, vmax=max(float(matrix.max(initial=0.0)), 1e-9), aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=90)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("source pieces" if family != "decoder_self" else "decoder input pieces")
    ax.set_ylabel("output pieces" if family != "encoder_self" else "source pieces")
    n_layers = len(source.encoder_self) if family == "encoder_self" else len(steps[0].cross) if steps else 1
    which = "mean of the heads" if head is None else f"head {head + 1}"
    layer_shown = layer % max(n_layers, 1) + 1  # counted from 1, as every view of tt counts layers and heads
    ax.set_title(f"{FAMILY_TITLES[family]}, layer {layer_shown} of {n_layers}, {which}", fontsize="medium")
    figure.colorbar(image, ax=ax, label="attention weight", shrink=0.8)
    return figure


def distribution_figure(step: StepTrace, candidates: list[Candidate] | None = None) -> Figure:
    """The next-piece distribution of one decoding step: its most probable pieces as horizontal bars,
    most probable on top, the piece the step chose in a darker colour."""
    candidates = list(step.candidates if candidates is None else candidates)
    figure = _figure(5.0, max(2.0, 0.3 * len(candidates) + 1.0))
    ax = figure.add_subplot()
    pieces = [c.piece for c in candidates]
    colours = ["#08519c" if c.token == step.token else "#9ecae1" for c in candidates]
    ax.barh(range(len(candidates)), [c.prob for c in candidates], color=colours)
    ax.set_yticks(range(len(candidates)), pieces)
    ax.invert_yaxis()  # the most probable on top
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("probability")
    ax.set_title(f"step {step.index + 1}: next-piece distribution (chose {step.piece})", fontsize="medium")
    return figure


# ------------------------------------------------------------------------------------ training
def curves_figure(panels: list[Panel], x: XAxis) -> Figure:
    """The learning-curve panels side by side, a series keeping its colour across panels."""
    from core.train.runs import X_LABELS

    shown = [p for p in panels if p.series]
    figure = _figure(4.5 * max(len(shown), 1), 3.5)
    labels = list(dict.fromkeys(s.label for p in shown for s in p.series))
    colours: dict[str, Any] = {label: f"C{n % 10}" for n, label in enumerate(labels)}
    for i, panel in enumerate(shown):
        ax = figure.add_subplot(1, len(shown), i + 1)
        for series in panel.series:
            dots = "." if len(series.x) < 30 else None  # a short curve shows where its points are
            ax.plot(series.x, series.y, label=series.label, color=colours[series.label], marker=dots)
        ax.set_title(panel.title)
        ax.set_xlabel(X_LABELS[x])
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="upper right" if panel.falls else "lower right")
    return figure


@dataclass(frozen=True)
class DecodingFigures:
    """What `tt translate --attention-figure/--distribution-figure` asked for, written per sentence."""

    attention: Path | None = None
    distribution: Path | None = None
    family: str = "cross"
    layer: int = -1
    head: int | None = None  # None = the mean of the heads
    step: int = 0  # the output step whose distribution is drawn (negative: from the end)

    def write(self, source: SourceTrace, steps: list[StepTrace]) -> list[Path]:
        written = []
        if self.attention is not None:
            figure = attention_figure(source, steps, self.family, self.layer, self.head)
            written.append(save(figure, self.attention, "--attention-figure"))
        if self.distribution is not None:
            if not -len(steps) <= self.step < len(steps):
                shown = self.step + 1 if self.step >= 0 else self.step  # as --step counts: from 1
                raise ConfigError(
                    f"--step {shown}: the translation has {len(steps)} steps (1..{len(steps)}, -1 = the last)"
                )
            written.append(save(distribution_figure(steps[self.step]), self.distribution, "--distribution-figure"))
        return written
