"""What the heatmap shows for a view of a decoding: rows, columns, weights and title; and the line
under it that reads out the selected cell. Pure functions of (ViewState, Decoding)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import torch

from core.align.links import DEFAULT_RULE, AlignRule, align_steps, words
from core.analysis.attribute import Attribution
from core.analysis.patterns import KIND_LEGEND, KIND_MARKS, HeadKind
from core.decode.trace import attention_grid, attention_matrix
from core.model.attention import Head, layer_head
from tt_cli.tui.session import Decoding
from tt_cli.tui.state import Cell, ViewState
from tt_cli.tui.widgets.explain import FAMILY_NAMES
from tt_cli.tui.widgets.heatmap import HeatmapData, label, nth


def picture(
    view: ViewState,
    d: Decoding,
    rule: AlignRule = DEFAULT_RULE,
    ranking: Sequence[dict] = (),
    sinks: Collection[Head] = (),
    full_cross: Sequence | None = None,
    kinds: Mapping[Head, HeadKind] | None = None,
) -> HeatmapData:
    """The heatmap for a view: one family, layer and head (None = mean), or the grid of all of them.

    Rows of cross and decoder self-attention are decoding steps, labelled with the piece each step
    chose; in the grid, the encoder's query is `view.enc_query`, the decoder's the last step.
    With `view.links`, the cross-attention matrix marks the cells of linked words under `rule`
    instead; the cross grid labels each head with its AER from the head finder's `ranking`,
    every grid marks the heads in `sinks` (those that park their attention, core/analysis/sinks.py),
    and a self-attention grid marks each head's pattern kind from `kinds` (core/analysis/patterns.py)
    beside its label, one character (KIND_MARKS) per head.
    A full-context rule reads `full_cross` (core.align.links.full_context_cross of the output so far);
    until it is there, the matrix has no marks and the title says so.
    """
    family, steps, n_layers = view.family, list(d.steps), view.n_layers
    src_pieces = d.source.pieces
    key_pieces = list(d.target_pieces) if family == "decoder_self" else src_pieces
    name = FAMILY_NAMES[family]
    if view.grid:
        if family == "encoder_self":
            query = min(view.enc_query, len(src_pieces) - 1)
            query_name = f"source {label(src_pieces[query], 12)}"
        elif not steps:
            return HeatmapData(f"{name} · all layers × heads", [], [], [])
        else:
            query = len(steps) - 1
            query_name = f"step {query + 1} → {label(steps[query].piece, 12)}"
        matrix = attention_grid(d.source, steps, family, query)
        off = {(layer, h) for f, layer, h in view.heads_off if f == family}
        aer = head_aer(ranking, n_layers) if family == "cross" else {}
        parked = {(layer, h) for f, layer, h in sinks if f == family}
        rows = [
            grid_label(
                layer,
                h,
                "off" if (layer, h) in off else f"{aer[layer, h]:.0%}" if (layer, h) in aer else "",
                (layer, h) in parked,
            )
            for layer in range(n_layers)
            for h in range(view.dims.h)
        ]
        title = f"{name} · all layers × heads · query {query_name}"
        if aer:
            title += " · AER of each head (tt align --find-heads; lower aligns better)"
        if parked:
            title += f" · {SINK} parks on </s>, punctuation or the first piece"
        marks = kind_marks(kinds or {}, family, n_layers, view.dims.h)
        if marks:
            title += f" · kind {KIND_LEGEND}"
        return HeatmapData(title, rows, key_pieces, matrix.tolist(), row_marks=marks)
    matrix = attention_matrix(d.source, steps, family, view.layer, view.head)
    heads = "mean of heads" if view.head is None else f"head {nth(view.head, view.dims.h)}"
    title = f"{name} · layer {nth(view.layer, n_layers)} · {heads}"
    if view.selected_head() in view.heads_off:
        title += " · switched off (o): the decoding on the intact model"
    if family == "encoder_self":
        return HeatmapData(title, src_pieces, src_pieces, matrix.tolist())
    rows = [st.piece for st in steps]
    if family == "cross" and view.links:
        title = f"{name} · links: {rule.describe(n_layers)}"  # a long title wraps and costs a row
        if rule.full_context and full_cross is None:  # the model thread is re-reading the output
            marks = []
            title += " · re-reading the output…"
        else:
            marks = link_marks(src_pieces, steps, rule, full_cross)
        return HeatmapData(
            title, rows, key_pieces, matrix.tolist(), current_row=len(rows) - 1 if rows else None, marks=marks
        )
    hidden = [[j > i for j in range(len(key_pieces))] for i in range(len(rows))] if family == "decoder_self" else []
    current = len(rows) - 1 if rows else None
    return HeatmapData(title, rows, key_pieces, matrix.tolist(), hidden, current)


SINK = "◆"  # a head that parks its attention: one cell wide, unlike an anchor emoji


def grid_label(layer: int, head: int, note: str, parked: bool) -> str:
    """ "L1H2 off", "L1H2◆41%" (Head's name, counted from 1): the sink mark takes the separator's place."""
    sep = SINK if parked else " "
    return layer_head(layer, head) + (sep + note if note or parked else "")


def kind_marks(kinds: Mapping[Head, HeadKind], family: str, n_layers: int, h: int) -> list[str]:
    """One mark per grid row (layer-major, as the rows) naming the head's kind; [] when the family
    has none (cross-attention, or before the model thread has read them)."""
    if not any(head.family == family for head in kinds):
        return []
    return [
        KIND_MARKS[kinds[family, layer, head].kind] if (family, layer, head) in kinds else " "
        for layer in range(n_layers)
        for head in range(h)
    ]


def link_marks(
    src_pieces: list[str], steps: list, rule: AlignRule, full_cross: Sequence | None = None
) -> list[list[bool]]:
    """(steps, source pieces): True on every piece pair of two linked words."""
    marks = [[False] * len(src_pieces) for _ in steps]
    src_words, tgt_words = words(src_pieces), words([st.piece for st in steps])
    for i, j in align_steps(src_pieces, steps, rule, full_cross):
        for t in tgt_words[j]:
            for s in src_words[i]:
                marks[t][s] = True
    return marks


def head_aer(ranking: Sequence[dict], n_layers: int) -> dict[tuple[int, int], float]:
    """(layer, head) → the best AER any rule reading that one head got in the head finder's ranking."""
    best: dict[tuple[int, int], float] = {}
    for row in ranking:
        if row.get("head") is not None and "aer" in row:
            key = (int(row["layer"]) % n_layers, int(row["head"]))
            best[key] = min(best.get(key, 1.0), float(row["aer"]))
    return best


def cell_text(cell: Cell, data: HeatmapData, d: Decoding, row: int) -> str:
    """The selected weight, where it sits, and the two pieces it connects."""
    if cell.family == "encoder_self":
        q_piece = d.source.pieces[cell.query]
    else:
        q_piece = f"step {cell.query + 1} ({label(d.steps[cell.query].piece, 12)})"
    weight = data.matrix[row][cell.key]
    heads = "mean of heads" if cell.head is None else f"head {cell.head + 1}"
    return (
        f"weight [b]{weight:.4f}[/b] · layer {cell.layer + 1} · {heads}\n"
        f"query {q_piece} → key {label(data.cols[cell.key], 14)} (position {cell.key})"
    )


ATTRIBUTION_NAMES = {"ixg": "input × gradient", "ig": "integrated gradients"}


def attribution_picture(d: Decoding, attr: Attribution | None, method: str) -> HeatmapData:
    """Each step's attribution to the source pieces, then to its decoder inputs (BOS, y_0 …), as
    |a| ÷ the row's largest |a|: the same heatmap as attention, one key (i) apart."""
    name = f"attribution · {ATTRIBUTION_NAMES[method]} · |a| ÷ row max"
    if attr is None:
        return HeatmapData(f"{name} · computing…", [], [], [])
    rows = [st.piece for st in d.steps]
    cols = [*d.source.pieces, *d.target_pieces][: attr.source.size(1) + attr.target.size(1)]
    # a replayed trace holds every step's attribution: the rows and inputs of the steps on screen
    matrix = attribution_matrix(attr)[: len(rows), : len(cols)].tolist()
    n_src = attr.source.size(1)
    hidden = [[j >= n_src and j - n_src > i for j in range(len(cols))] for i in range(len(rows))]
    return HeatmapData(name, rows, cols, matrix, hidden, len(rows) - 1 if rows else None)


def attribution_matrix(attr: Attribution):
    """(T, S + T): |attribution| over source then target inputs, each row scaled to its max."""
    a = torch.cat([attr.source, attr.target], dim=1).abs()  # (T, S + T)
    return a / a.amax(dim=1, keepdim=True).clamp(min=1e-12)


def attribution_text(attr: Attribution, d: Decoding, row: int, col: int) -> str:
    """The selected attribution, signed, and what it connects."""
    n_src = attr.source.size(1)
    value = float(attr.source[row, col] if col < n_src else attr.target[row, col - n_src])
    key = (
        f"source {label(d.source.pieces[col], 14)}"
        if col < n_src
        else f"input {label(d.target_pieces[col - n_src], 14)}"
    )
    return (
        f"attribution [b]{value:+.4f}[/b] nats ({attr.method}) · step {row + 1} ({label(d.steps[row].piece, 12)})\n"
        f"← {key} (position {col}) · row total {float(attr.totals()[row]):+.3f}"
    )
