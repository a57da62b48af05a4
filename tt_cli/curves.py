"""Learning curves in the terminal, drawn by plotext: `tt train`'s live curve and `tt runs show`.

Both draw the panels of core.train.runs (loss; BLEU), side by side, one coloured line per series
with its label in the legend. plotext draws on one module-level figure, so a caller draws from
one thread at a time.
"""

from __future__ import annotations

from core.train.runs import X_LABELS, Panel, XAxis

MARKERS = "•x+o*#%@"
PALETTE = (12, 10, 9, 14, 13, 11, 8, 7)  # terminal colours: bright blue, green, red, cyan, magenta, yellow, greys
MIN_PANEL_WIDTH = 30  # below this a panel's ticks crowd out its data: panels go one under the other


def draw(panels: list[Panel], x: XAxis, width: int, height: int, colour: bool = True, title: str = "") -> str:
    """The panels that have data, side by side in `width` × `height` cells, as text (ANSI colours when
    `colour`); "" when no panel has a point yet."""
    import plotext

    shown = [p for p in panels if p.series]
    if not shown:
        return ""
    # A series keeps its look across panels: a colour each, and without colour a character each.
    labels = list(dict.fromkeys(s.label for p in shown for s in p.series))
    markers = {
        label: plotext.marker("hd" if colour else MARKERS[n % len(MARKERS)], plotext.pixel(PALETTE[n % len(PALETTE)]))
        for n, label in enumerate(labels)
    }
    figure = plotext.figure
    figure.clear()
    plotext.terminal.limit(False, False)  # the size asked for, whatever the terminal (a pipe, a test)
    side_by_side = width // len(shown) >= MIN_PANEL_WIDTH
    rows, cols = (1, len(shown)) if side_by_side else (len(shown), 1)
    if len(shown) > 1:  # a grid of one is no grid to plotext: the figure is the one plot
        figure.subplots(rows, cols)
    figure.plot_size(width, height if side_by_side else height * len(shown))
    for i, panel in enumerate(shown):
        plot = figure if len(shown) == 1 else figure.subplot(1, i + 1) if side_by_side else figure.subplot(i + 1, 1)
        plot.theme("simple")
        plot.title(f"{panel.title} · {title}" if title and i == 0 else panel.title)
        plot.label(X_LABELS[x])
        for series in panel.series:
            signal = plot.signal(series.x, series.y, marker=markers[series.label])
            signal.label(series.label)
            signal.lines()
            plot.draw(signal)
        if panel.falls:  # top right, in data units
            xs, ys = [v for s in panel.series for v in s.x], [v for s in panel.series for v in s.y]
            plot.legend(x=max(xs), y=max(ys), ha="right", relative=True)
    return figure.build().string(colorless=not colour).rstrip("\n")
