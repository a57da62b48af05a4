"""The insides screen's panels as Rich text, from `Internals` and the selected position and layer.

Pure functions of their data: the screen picks the position (a source piece) and the encoder layer,
these say what the notes draw at that point, with the model's own numbers.
"""

from __future__ import annotations

import math

import torch
from rich.text import Text

from core.analysis.internals import embed_position, ffn_activity, shape_strip, unscaled_weights
from core.analysis.patterns import MIXED, SATURATED
from tt_cli.tui.views.data import Internals

SHOWN = 6  # components of a d_model vector written out


def _v(t: torch.Tensor, n: int = SHOWN) -> str:
    return "[" + ", ".join(f"{float(x):+.2f}" for x in t[:n]) + (", …]" if t.numel() > n else "]")


def _rows(out: Text, rows: list[tuple[str, str]], width: int = 24) -> Text:
    for label, value in rows:
        out.append(f"{label:<{width}}", style="dim")
        out.append(f"{value}\n")
    return out


def _title(text: str) -> Text:
    return Text(text + "\n\n", style="bold")


def where(data: Internals, position: int, layer: int) -> str:
    return f"source piece {position} “{data.walk.pieces[position]}” · encoder layer {layer + 1}/{len(data.walk.layers)}"


def shapes(data: Internals, position: int, layer: int) -> Text:
    out = _title(f"Tensor shapes of encoder layer {layer + 1}'s self-attention (batch × … read off the live tensors)")
    strip = shape_strip(data.walk, layer)
    out.append("  →  ".join(" × ".join(map(str, shape)) for _, shape in strip) + "\n\n")
    return _rows(out, [(label, " × ".join(map(str, shape))) for label, shape in strip], 30)


def heads(data: Internals, position: int, layer: int) -> Text:
    out = _title(f"Heads by the pattern they show on this sentence and its translation “{data.translation}”")
    out.append(f"{'head':<18}{'kind':<12}{'distance':>9}{'uniform':>9}{'saturated ÷√d_k':>17}{'without':>9}\n", "dim")
    for p in data.patterns.heads:
        name = f"{p.family.replace('_', ' ')} {p.layer + 1}.{p.head + 1}"
        out.append(f"{name:<18}")
        out.append(f"{p.kind:<12}", style="bold" if p.kind != MIXED else "")
        out.append(
            f"{p.distance:>9.2f}{p.uniform_distance:>9.2f}{p.saturated_scaled:>17.0%}{p.saturated_unscaled:>9.0%}\n"
        )
    out.append(
        "\nkind: the kind of key (previous, next, diagonal, same word, long range, parked) that holds the most of\n"
        "the head's weight well beyond its uniform share; saturated: rows whose largest weight ≥ "
        f"{SATURATED}, with and without the ÷√d_k.\n",
        style="dim",
    )
    return out


def scaling(data: Internals, position: int, layer: int) -> Text:
    a = data.walk.layers[layer].attention
    d_k = a.q.size(-1)
    scaled, raw = a.weights[0, :, position], unscaled_weights(a)[0, :, position]  # (h, S)
    out = _title(f"softmax(q·k / √{d_k}) beside softmax(q·k) for the query “{data.walk.pieces[position]}”")
    pieces = data.walk.pieces
    for h in range(scaled.size(0)):
        top = scaled[h].argmax()
        out.append(f"head {h + 1}: ", style="bold")
        out.append(f"÷√d_k max {float(scaled[h].max()):.2f} on “{pieces[int(top)]}”   ")
        style = "red" if float(raw[h].max()) >= SATURATED else ""
        out.append(f"without: max {float(raw[h].max()):.2f} on “{pieces[int(raw[h].argmax())]}”\n", style=style)
        out.append(f"   scaled   {_v(scaled[h], 8)}\n   unscaled {_v(raw[h], 8)}\n", style="dim")
    rows = [p for p in data.patterns.heads if p.family == "encoder_self" and p.layer == layer]
    out.append(f"\nrows saturated (max ≥ {SATURATED}) in layer {layer + 1}, per head: ")
    out.append(", ".join(f"{p.saturated_scaled:.0%} → {p.saturated_unscaled:.0%} without" for p in rows) + "\n")
    return out


def embedding(data: Internals, position: int, layer: int) -> Text:
    e = embed_position(data.walk, position)
    d_model = e.embedding.numel()
    out = _title(f"x = E[“{e.piece}”] · √{d_model} + PE({position})  (√d_model = {math.sqrt(d_model):.2f})")
    return _rows(
        out,
        [
            ("E · √d_model", _v(e.embedding)),
            (f"PE({position})", _v(e.position_vector)),
            ("sum: what layer 1 reads", _v(e.total)),
            ("‖E·√d‖, ‖PE‖", f"{e.embedding_norm:.2f}, {e.position_norm:.2f}"),
        ],
    )


def add_norm(data: Internals, position: int, layer: int) -> Text:
    out = Text()
    for name, t in (
        ("self-attention", data.walk.layers[layer].attention_norm),
        ("feed-forward", data.walk.layers[layer].ffn_norm),
    ):
        order = "LayerNorm(x + Sublayer(x))" if t.post else "x + Sublayer(LayerNorm(x))"
        out.append(f"Add & Norm after {name}, layer {layer + 1}: {order}\n", style="bold")
        x_hat = t.x_hat[position]
        _rows(
            out,
            [
                ("x", _v(t.x[position])),
                ("Sublayer(x)", _v(t.sublayer[position])),
                ("x + Sublayer(x)", _v(t.total[position])),
                ("μ, σ", f"{float(t.mean[position]):.3f}, {float(t.std[position]):.3f}"),
                ("x̂ = (z − μ) / σ", _v(x_hat) + f"  min {float(x_hat.min()):.2f}, max {float(x_hat.max()):.2f}"),
                ("γ", _v(t.gamma)),
                ("β", _v(t.beta)),
                ("out", _v(t.out[position])),
            ],
        )
        out.append("\n")
    out.append("x̂ has mean 0 and variance 1: its values run below 0 and above 1, not “between 0 and 1”.\n", "dim")
    return out


def feed_forward(data: Internals, position: int, layer: int) -> Text:
    a = ffn_activity(data.walk, layer, position)
    out = _title(f"FFN(x) = max(0, x W1 + b1) W2 + b2 at “{a.piece}”, layer {layer + 1}")
    _rows(
        out,
        [
            ("units that fire", f"{a.firing} of d_ff = {a.d_ff} ({a.firing / a.d_ff:.0%})"),
            ("largest units", ", ".join(f"#{i} {v:.2f}" for i, v in a.top)),
            ("‖x‖ in, ‖FFN(x)‖ out", f"{a.input_norm:.2f}, {a.output_norm:.2f}"),
        ],
    )
    b = data.parameters
    out.append(f"\nParameters ({b.total:,} in all, a shared matrix counted once)\n", style="bold")
    _rows(out, [(group, f"{n:>12,}  {n / b.total:6.1%}") for group, n in b.groups.items()])
    one = sum(b.encoder_layer.values())
    out.append(f"\none encoder layer: feed-forward {b.encoder_layer['feed-forward'] / one:.1%} of {one:,} ", "dim")
    out.append("(the notes' “two thirds” holds for d_ff = 4 · d_model)\n", "dim")
    return out


def positions(data: Internals, position: int, layer: int) -> Text:
    out = _title(f"{data.positional} positional encoding: PE(p) for the first positions (first {SHOWN} of d_model)")
    table = data.positions
    _rows(out, [(f"PE({p})" + (" ◀" if p == position else ""), _v(table[p])) for p in range(min(8, table.size(0)))], 10)
    d = data.dots
    out.append(
        "\nPE(p)·PE(p + k): one value per p in (0, 3, 10, 25, 50) — equal across p when it depends on k only\n", "bold"
    )
    _rows(
        out,
        [
            (f"k = {k}", "  ".join(f"{v:7.3f}" for v in row) + f"   spread {s:.1e}")
            for k, row, s in zip(d.offsets, d.dots, d.spread)
        ],
        10,
    )
    return out


def contextual(data: Internals, position: int, layer: int) -> Text:
    walk = data.walk
    piece = walk.pieces[position]
    vectors = walk.vectors()[:, position]  # (n_layers + 1, d_model)
    out = _title(f"“{piece}”: its static embedding (× √d_model) and its vector after each encoder layer")
    levels = ["embedding"] + [f"layer {i + 1}" for i in range(len(walk.layers))]
    static = vectors[0]
    cos = torch.nn.functional.cosine_similarity(vectors.double(), static.double()[None], dim=-1)
    _rows(
        out,
        [
            (lv, f"‖v‖ {float(v.norm()):7.2f}   cosine to the embedding {float(c):.3f}")
            for lv, v, c in zip(levels, vectors, cos)
        ],
        12,
    )
    if data.context is None:
        out.append("\nc: type a second sentence with the same word, to see whether its vectors separate.\n", "dim")
        return out
    ctx = data.context
    out.append(f"\n“{ctx.word}” here and in “{ctx.second}”: cosine of its vectors\n", style="bold")
    return _rows(out, [(lv, f"{s:.3f}") for lv, s in zip(ctx.levels, ctx.similarity)], 12)


PANELS = {
    "shapes": ("tensor shapes", shapes),
    "heads": ("heads", heads),
    "scaling": ("÷√d_k", scaling),
    "embedding": ("embedding + position", embedding),
    "add_norm": ("Add & Norm", add_norm),
    "ffn": ("feed-forward", feed_forward),
    "positions": ("positions", positions),
    "contextual": ("contextual", contextual),
}
