"""Each lesson step's numbers on the live model, read from core.analysis (never typed in), and the attention
tables some steps draw.

Each function takes the loaded model and the step's sentences and gives (label, value) lines, or a `Matrix`;
a step names its own (`core.learn.lesson.Step.live`, `.matrix`) and `core.learn.lesson.live_numbers` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from core.analysis import claims
from core.analysis.internals import (
    contextual_similarity,
    embed_position,
    ffn_activity,
    parameter_breakdown,
    position_dots,
    position_table,
    shape_strip,
    source_walk,
    unscaled_weights,
)
from core.model.attention import Head

Lines = list[tuple[str, str]]
# The word of the contextual step's three sentences (core.learn.steps.CONTEXT_SENTENCES).
CONTEXT_WORD = "temps"


def _f(values, places: int = 3) -> str:
    return "[" + ", ".join(f"{float(v):.{places}f}" for v in values) + "]"


@torch.inference_mode()
def _teacher_forced(loaded, text: str):
    """The greedy translation of `text` and one teacher-forced pass over it with every attention kept."""
    from core.decode.search import greedy

    walk = source_walk(loaded, text)
    model, cfg = loaded.model, loaded.cfg
    src = torch.tensor([walk.ids])
    out = greedy(model, src)[0].tokens
    enc = model.encode(src, need_weights=True)
    tgt_in = torch.tensor([[cfg.bos_id] + out])
    dec = model.decode(tgt_in, enc, need_weights=True)
    return walk, out, loaded.tokenizer.pieces(out), dec


def alignment(loaded, text: str) -> Lines:
    walk, _, out_pieces, dec = _teacher_forced(loaded, text)
    cross = dec.cross_attention[-1].weights[0].mean(0)  # (T, S): last layer, heads averaged
    lines = []
    for t, piece in enumerate(out_pieces[:8]):
        s = int(cross[t].argmax())
        lines.append((piece, f"→ {walk.pieces[s]} ({float(cross[t, s]):.2f})"))
    return lines


def contextual(loaded, first: str, same: str, other: str) -> Lines:
    """The cosine of CONTEXT_WORD's vectors, layer by layer: the first sentence against the second (the same
    sense: the control) and against the third (the other sense)."""
    control = contextual_similarity(loaded, CONTEXT_WORD, first, same)
    shifted = contextual_similarity(loaded, CONTEXT_WORD, first, other)
    return [(f"cosine of '{CONTEXT_WORD}' to sentence 1", "sentence 2 (same sense) · sentence 3 (other sense)")] + [
        (level, f"{a:.3f} · {b:.3f}") for level, a, b in zip(control.levels, control.similarity, shifted.similarity)
    ]


def the_cat_sat(loaded, text: str) -> Lines:
    walk = source_walk(loaded, text)
    a = walk.layers[0].attention
    q = 1
    raw = a.q[0, 0, q] @ a.k[0, 0].T  # (S,) head 0, query 1
    return [
        ("query", f"{walk.pieces[q]} (layer 1, the first of its parallel attentions, d_k = {a.q.size(-1)})"),
        ("q·k", _f(raw, 2)),
        ("q·k / √d_k", _f(a.scores[0, 0, q], 2)),
        ("weights", _f(a.weights[0, 0, q])),
        ("keys", " ".join(walk.pieces)),
    ]


def attention_table(loaded, text: str) -> Lines:
    walk = source_walk(loaded, text)
    w = walk.layers[0].attention.weights[0].mean(0)  # (S, S) heads averaged
    return [(p, f"→ {walk.pieces[int(w[i].argmax())]} ({float(w[i].max()):.2f})") for i, p in enumerate(walk.pieces)]


def head_name(name: str) -> str:
    """A claim's head ("encoder_self L1H2", counted from 1 as everywhere) in the lesson's words: "layer 1, head 2"."""
    at = Head.named(name)
    return f"layer {at.layer + 1}, head {at.head + 1}"


def coreference(loaded, text: str) -> Lines:
    c = claims.il_attends_animal(loaded, text)
    best = c.values["best"]
    on_animal, on_rue = c.values["heads"][best]
    return [
        ("best head", head_name(best)),
        ("weight on 'animal' / on 'rue'", f"{on_animal:.3f} / {on_rue:.3f}"),
        ("uniform share of 'animal'", f"{c.values['uniform']:.3f}"),
        ("verdict", c.verdict),
    ]


def scaling(loaded, text: str) -> Lines:
    walk = source_walk(loaded, text)
    lines = []
    for i, layer in enumerate(walk.layers):
        a = layer.attention
        scaled, raw = a.weights[0].amax(-1), unscaled_weights(a)[0].amax(-1)  # (h, S) largest weight per row
        lines.append(
            (
                f"layer {i + 1} rows ≥ 0.99",
                f"{float((scaled >= 0.99).float().mean()):.0%} scaled, {float((raw >= 0.99).float().mean()):.0%} unscaled",
            )
        )
    return lines


def multi_head(loaded, text: str) -> Lines:
    return [(label, " × ".join(map(str, shape))) for label, shape in shape_strip(source_walk(loaded, text))]


def positions(loaded, text: str) -> Lines:
    dots = position_dots(position_table(loaded.model, min(64, loaded.cfg.max_len)))
    walk = source_walk(loaded, text)
    return [
        ("PE(1), first 4 of d_model", _f(walk.positions[1][:4], 4)),
        *[(f"PE(p)·PE(p+{k}) for p = 0, 3, 10…", _f(row, 3)) for k, row in zip(dots.offsets, dots.dots)][:3],
        (
            "shuffled words, no positions: error",
            f"{claims.permutation_error(loaded.model, walk.ids, positions=False):.1e}",
        ),
        (
            "shuffled words, with positions: error",
            f"{claims.permutation_error(loaded.model, walk.ids, positions=True):.2f}",
        ),
    ]


def embed_and_position(loaded, text: str) -> Lines:
    ep = embed_position(source_walk(loaded, text), 1)
    return [
        ("piece, position", f"{ep.piece}, {ep.position}"),
        ("E · √d_model (first 4)", _f(ep.embedding[:4])),
        ("PE (first 4)", _f(ep.position_vector[:4])),
        ("sum (first 4)", _f(ep.total[:4])),
        ("‖E·√d‖, ‖PE‖", f"{ep.embedding_norm:.2f}, {ep.position_norm:.2f}"),
    ]


def add_norm(loaded, text: str) -> Lines:
    walk = source_walk(loaded, text)
    t, p = walk.layers[0].attention_norm, 1
    return [
        ("piece", walk.pieces[p]),
        ("x (first 4)", _f(t.x[p][:4])),
        ("Sublayer(x)", _f(t.sublayer[p][:4])),
        ("x + Sublayer(x)", _f(t.total[p][:4])),
        ("μ, σ", f"{float(t.mean[p]):.3f}, {float(t.std[p]):.3f}"),
        ("x̂", _f(t.x_hat[p][:4]) + f"  (min {float(t.x_hat[p].min()):.2f}, max {float(t.x_hat[p].max()):.2f})"),
        ("γ, β", _f(t.gamma[:4]) + ", " + _f(t.beta[:4])),
        ("out", _f(t.out[p][:4])),
    ]


def encoder_stack(loaded, text: str) -> Lines:
    walk = source_walk(loaded, text)
    lines = []
    for i in range(len(walk.layers)):
        a = ffn_activity(walk, i, 1)
        lines.append(
            (
                f"layer {i + 1} FFN at {a.piece}",
                f"{a.firing}/{a.d_ff} units fire, largest #{a.top[0][0]} = {a.top[0][1]:.2f}, ‖out‖ {a.output_norm:.2f}",
            )
        )
    b = parameter_breakdown(loaded.model)
    lines.append(
        ("FFN share of the parameters", f"{b.share('feed-forward'):.1%} ({b.groups['feed-forward']:,} of {b.total:,})")
    )
    return lines


def masks(loaded, text: str) -> Lines:
    walk, _, out_pieces, dec = _teacher_forced(loaded, text)
    w = dec.self_attention[0].weights[0, 0]  # (T, T) layer 1, head 1
    enc = walk.layers[0].attention.weights[0, 0]  # (S, S) layer 1, head 1: no look-ahead mask
    n = min(4, w.size(0))
    return [(f"row {i} ({(['<s>'] + out_pieces)[i]})", _f(w[i, :n])) for i in range(n)] + [
        ("rows sum to", _f(w.sum(-1)[:n], 3)),
        ("decoder: weight above the diagonal", f"{float(w.triu(1).sum()):.1f}"),
        ("encoder: weight above the diagonal", f"{float(enc.triu(1).sum()):.1f} of {enc.size(0)} rows"),
    ]


def cross_attention(loaded, text: str) -> Lines:
    walk, _, out_pieces, dec = _teacher_forced(loaded, text)
    a = dec.cross_attention[-1]
    return [
        ("query (decoder input)", f"<s> → first piece {out_pieces[0] if out_pieces else '</s>'}"),
        ("keys (encoder pieces)", " ".join(walk.pieces)),
        ("weights, last layer head 1", _f(a.weights[0, 0, 0])),
    ]


def output(loaded, text: str) -> Lines:
    _, _, _, dec = _teacher_forced(loaded, text)
    probs = dec.logits[0, 0].softmax(-1)
    top = probs.topk(5)
    return [(loaded.tokenizer.pieces([int(i)])[0], f"{float(p):.3f}") for p, i in zip(top.values, top.indices)]


def training(loaded, src: str, ref: str) -> Lines:
    from core.analysis.reference import compare_pairs

    c = compare_pairs(loaded, [(src, ref)])[0]
    lines = [(s.ref_piece, f"p = {s.ref_prob:.3f}, rank {s.ref_rank}") for s in c.steps[:8]]
    return lines + [("log p(reference)", f"{c.ref_logprob:.2f}")]


@torch.inference_mode()
def beam(loaded, text: str, size: int = 4, alpha: float = 0.6) -> Lines:
    """Beam search's finished hypotheses with their log p, length penalty and score; greedy beside them."""
    from core.decode.beam import beam_search, length_penalty

    walk = source_walk(loaded, text)
    hyps = beam_search(loaded.model, torch.tensor([walk.ids]), beam_size=size, alpha=alpha, n_best=size)[0]
    lines = [("greedy", claims.translate_all(loaded, [text], beam=1)[0])]
    for rank, h in enumerate(hyps, 1):
        n = len(h.token_logprobs)
        lines.append(
            (
                f"beam {size} #{rank}: log p {h.logprob:.2f}, lp({n}) {length_penalty(n, alpha):.2f}, score {h.score:.3f}",
                loaded.tokenizer.decode(h.tokens),
            )
        )
    return lines


# ------------------------------------------------------------------------ the matrix a step draws
@dataclass
class Matrix:
    """An attention table the lesson draws beside a step's numbers: rows query, columns key."""

    title: str
    rows: list[str]
    cols: list[str]
    weights: list[list[float]]  # (rows, cols), each row summing to 1
    hidden: list[list[bool]] = field(default_factory=list)  # True where a mask forbids attending
    # Which attention this is, for tt inspect to open on it: a family of core.model.attention.FAMILIES,
    # the layer (0-based, as core counts; every view prints it 1-based) and the head (None = the mean).
    family: str = "cross"
    layer: int = 0
    head: int | None = None


def _rows(t: torch.Tensor) -> list[list[float]]:
    return [[float(v) for v in row] for row in t]


def _decoder_rows(out_pieces: list[str]) -> list[str]:
    # Row t is the query that predicts piece t; the last one predicts the end of the sentence.
    return out_pieces + ["</s>"]


def _cross_matrix(loaded, text: str, *, mean: bool) -> Matrix:
    walk, _, out_pieces, dec = _teacher_forced(loaded, text)
    w = dec.cross_attention[-1].weights[0]  # (h, T, S)
    n = len(dec.cross_attention)
    title = f"cross-attention, layer {n}, " + ("mean of the heads" if mean else "head 1")
    rows = _rows(w.mean(0) if mean else w[0])
    return Matrix(
        title, _decoder_rows(out_pieces), walk.pieces, rows, family="cross", layer=n - 1, head=None if mean else 0
    )


def encoder_matrix(loaded, text: str) -> Matrix:
    walk = source_walk(loaded, text)
    w = walk.layers[0].attention.weights[0].mean(0)  # (S, S) heads averaged
    return Matrix(
        "encoder self-attention, layer 1, mean of the heads", walk.pieces, walk.pieces, _rows(w), family="encoder_self"
    )


def coreference_matrix(loaded, text: str) -> Matrix:
    best = claims.il_attends_animal(loaded, text).values["best"]
    _, layer, head = Head.named(best)
    walk = source_walk(loaded, text)
    w = walk.layers[layer].attention.weights[0, head]  # (S, S)
    title = f"encoder self-attention, {head_name(best)}"
    return Matrix(title, walk.pieces, walk.pieces, _rows(w), family="encoder_self", layer=layer, head=head)


def masks_matrix(loaded, text: str) -> Matrix:
    _, _, out_pieces, dec = _teacher_forced(loaded, text)
    w = dec.self_attention[0].weights[0, 0]  # (T, T) layer 1, head 1
    labels = ["<s>"] + out_pieces
    hidden = [[j > i for j in range(w.size(1))] for i in range(w.size(0))]
    title = "masked decoder self-attention, layer 1, head 1"
    return Matrix(title, labels, labels, _rows(w), hidden, family="decoder_self", layer=0, head=0)


def cross_mean_matrix(loaded, text: str) -> Matrix:
    """The last layer's cross-attention, heads averaged: each output piece against the source."""
    return _cross_matrix(loaded, text, mean=True)


def cross_head_matrix(loaded, text: str) -> Matrix:
    """The last layer's cross-attention, head 1."""
    return _cross_matrix(loaded, text, mean=False)
