"""What the heatmap shows for a view of the Stepper: the rows, columns, weights and title."""

from __future__ import annotations

from core.analysis.trace import attention_grid, attention_matrix
from core.decode.stepper import Stepper
from tt_cli.tui.widgets.explain import FAMILY_NAMES
from tt_cli.tui.widgets.heatmap import HeatmapData, label


def picture(
    s: Stepper, family: str, layer: int, head: int | None, *, grid: bool = False, enc_query: int = 0
) -> HeatmapData:
    """The heatmap for a view: one family, layer and head (None = mean), or the grid of all of them.

    Rows of cross and decoder self-attention are decoding steps, labelled with the piece each step
    chose; `enc_query` is the source position the encoder grid shows.
    """
    n_layers = s.cfg.n_encoder_layers if family == "encoder_self" else s.cfg.n_decoder_layers
    src_pieces = s.source.pieces
    key_pieces = s.tokenizer.pieces(s.target_inputs) if family == "decoder_self" else src_pieces
    name = FAMILY_NAMES[family]
    if grid:
        if family == "encoder_self":
            query = min(enc_query, len(src_pieces) - 1)
            query_name = f"source {label(src_pieces[query], 12)}"
        elif not s.steps:
            return HeatmapData(f"{name} · all layers × heads", [], [], [])
        else:
            query = len(s.steps) - 1
            query_name = f"step {query} → {label(s.steps[query].piece, 12)}"
        matrix = attention_grid(s.source, s.steps, family, query)
        rows = [f"L{l} h{h}" for l in range(n_layers) for h in range(s.cfg.h)]
        title = f"{name} · all layers × heads · query {query_name}"
        return HeatmapData(title, rows, key_pieces, matrix.tolist())
    matrix = attention_matrix(s.source, s.steps, family, layer, head)
    heads = "mean of heads" if head is None else f"head {head}"
    title = f"{name} · layer {layer}/{n_layers - 1} · {heads}"
    if family == "encoder_self":
        return HeatmapData(title, src_pieces, src_pieces, matrix.tolist())
    rows = [st.piece for st in s.steps]
    hidden = [[j > i for j in range(len(key_pieces))] for i in range(len(rows))] if family == "decoder_self" else []
    current = len(rows) - 1 if rows else None
    return HeatmapData(title, rows, key_pieces, matrix.tolist(), hidden, current)

