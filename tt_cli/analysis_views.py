"""Rich views of `tt analyze`'s results: the reference table, the sink table, the ablation heatmap
and the pruning curve. Reads only core's dataclasses; imports rich, never typer or textual."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from core.model.attention import layer_head


def show_comparison(console, c) -> None:
    console.print(f"source     {c.source}\nreference  {c.reference}\ngreedy     {c.output}")
    table = Table(box=None, header_style="bold")
    for col in ("step", "reference", "rank", "p(ref)", "model's choice", "p"):
        table.add_column(col, justify="right" if col in ("step", "rank", "p(ref)", "p") else "left")
    for s in c.steps:
        style = "bold red" if s.index == c.first_divergence else ("" if s.agrees else "yellow")
        table.add_row(
            str(s.index + 1),  # steps count from 1, as in tt inspect
            s.ref_piece,
            str(s.ref_rank),
            f"{s.ref_prob:.3f}",
            s.model_piece,
            f"{s.model_prob:.3f}",
            style=style,
        )
    console.print(table)
    where = (
        "none: greedy output follows the reference" if c.first_divergence is None else f"step {c.first_divergence + 1}"
    )
    console.print(f"first divergence: {where} · log p(reference) = {c.ref_logprob:.3f}")


def show_sinks(console, found, n: int) -> None:
    table = Table(
        title=f"attention sinks over {n} sentence(s): share of mass (uniform share)", box=None, header_style="bold"
    )
    for col in ("family", "layer", "head", "</s>", "punct", "first", "parks on"):
        table.add_column(col, justify="left" if col in ("family", "parks on") else "right")
    for s in found:
        cells = [
            f"{s.share[c]:.2f} ({s.uniform[c]:.2f})" if not (c == "eos" and s.family == "decoder_self") else "–"
            for c in ("eos", "punct", "first")
        ]
        table.add_row(
            s.family,
            str(s.layer + 1),
            str(s.head + 1),
            *cells,
            ", ".join(s.parks_on),
            style="bold yellow" if s.parks_on else "",
        )
    console.print(table)
    parked = [s for s in found if s.parks_on]
    console.print(
        f"{len(parked)} of {len(found)} heads park their attention"
        + (": " + ", ".join(f"{s.at} on {'/'.join(s.parks_on)}" for s in parked) if parked else ".")
    )


def show_ablation(console, ablation, parks: dict) -> None:
    """A heatmap of the deltas (rows: family × layer, columns: heads; red = the metric drops)."""
    unit = "mean log p(reference)" if ablation.metric == "logprob" else "BLEU"
    console.print(
        f"{unit} with every head on: {ablation.intact:.3f} ({ablation.sentences} sentences); "
        f"cells: change when that head alone is off; * parks its attention"
    )
    scale = max((abs(e.delta) for e in ablation.effects), default=0.0) or 1.0
    n_heads = max(e.head.head for e in ablation.effects) + 1
    table = Table(box=None, header_style="bold")
    table.add_column("family / layer")
    for j in range(n_heads):
        table.add_column(f"head {j + 1}", justify="right")
    rows: dict[tuple[str, int], list] = {}
    for e in ablation.effects:
        rows.setdefault((e.head.family, e.head.layer), [None] * n_heads)[e.head.head] = e
    for (family, layer), effects in rows.items():
        cells = []
        for e in effects:
            if e is None:
                cells.append(Text(""))
                continue
            strength = min(abs(e.delta) / scale, 1.0)
            colour = "red" if e.delta < 0 else "green"
            style = f"on {colour}" if strength > 0.5 else (f"{colour}" if strength > 0.1 else "")
            mark = "*" if parks.get(e.head) else " "
            cells.append(Text(f"{e.delta:+.3f}{mark}", style=style))
        table.add_row(f"{family} {layer_head(layer)}", *cells)
    console.print(table)
    worst = sorted(ablation.effects, key=lambda e: e.delta)[:3]
    console.print("most needed: " + ", ".join(f"{e.head} ({e.delta:+.3f})" for e in worst))


PRUNE_TITLES = {
    "once": "pruning curve, order once: least damaging head first, by single-head ablation",
    "greedy": "pruning curve, order greedy: at each step the head whose removal hurts least, given those off",
}


def show_curve(console, curve, metric: str, order: str) -> None:
    console.print(PRUNE_TITLES[order])
    table = Table(box=None, header_style="bold")
    for col in ("heads off", "head removed", metric, "change"):
        table.add_column(col, justify="left" if col == "head removed" else "right")
    for p in curve:
        table.add_row(
            str(p.removed), "—" if p.head is None else str(p.head), f"{p.value:.3f}", f"{p.value - curve[0].value:+.3f}"
        )
    console.print(table)
