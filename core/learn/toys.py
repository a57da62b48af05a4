"""The notes' toy numbers, recomputed by tt's own functions (the ones tests/test_seeds.py checks).

Each toy returns (label, value) lines; the lesson shows them before the same step on the live model.
Nothing here is typed in from the notes except their inputs: every output is computed.
"""

from __future__ import annotations

import math

import torch

from core.model.attention import scaled_dot_product_attention
from core.model.layers import AddNorm, PositionalEncoding, sinusoidal_table
from core.model.masks import decoder_mask

Lines = list[tuple[str, str]]


def _v(t: torch.Tensor, places: int = 4) -> str:
    """A vector or matrix as the notes write it: [0.4223, 0.1554] / [[...], [...]]."""
    t = t.detach()
    if t.dim() == 0:
        return f"{float(t):.{places}f}"
    return "[" + ", ".join(_v(x, places) for x in t) + "]"


def context_vector() -> Lines:
    """000 (Bahdanau): c_i = Σ_j α_ij h_j, with α a softmax over the alignment scores."""
    h = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # three annotations h_j
    scores = torch.tensor([2.0, 0.5, 1.0])
    alpha = scores.softmax(-1)
    return [("scores e_ij", _v(scores, 1)), ("α = softmax(e)", _v(alpha)), ("c_i = Σ α_ij h_j", _v(alpha @ h))]


THE_CAT_SAT = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])


def the_cat_sat() -> Lines:
    """000 "The cat sat", W_Q = W_K = W_V = I, d_k = 4."""
    x = THE_CAT_SAT
    out, weights, scores = scaled_dot_product_attention(x, x, x)
    return [
        ("E_The, E_CAT, E_SAT", _v(x, 0)),
        ("Q Kᵀ", _v(x @ x.T, 0)),
        ("Q Kᵀ / √4", _v(scores, 1)),
        ("weights", _v(weights)),
        ("Output(The)", _v(out[0]) + "  (the note's [1.2669, 0.9999, …] adds V_The three times)"),
    ]


def static_vs_contextual() -> Lines:
    """tt's example of 001's idea ("money bank" / "river bank"): one static vector, two contextual ones.

    The weights come from a softmax of bank's dot products with (context, bank), as self-attention computes
    them (W = I), not typed in."""
    v = {"money": torch.tensor([0.0, 1.0]), "river": torch.tensor([1.0, -1.0]), "bank": torch.tensor([1.0, 0.0])}
    lines = [("static e_bank (both sentences)", _v(v["bank"], 1))]
    ys = []
    for context in ("money", "river"):
        kv = torch.stack([v[context], v["bank"]])  # (2, 2): the sentence "context bank"
        y, w, _ = scaled_dot_product_attention(v["bank"][None], kv, kv)  # bank's query over both words
        ys.append(y[0])
        lines += [(f"w(bank → {context}, bank)", _v(w[0], 3)), (f"y_bank in '{context} bank'", _v(y[0], 3))]
    cos = torch.nn.functional.cosine_similarity(ys[0], ys[1], dim=0)
    return lines + [("cosine of the two y_bank", _v(cos, 3) + "  (the static vectors' cosine is 1)")]


def scaling() -> Lines:
    """000 [6, 4] with d_k = 4; 001 money/bank 10 and 32 with d_k = 2."""
    raw = torch.tensor([6.0, 4.0])
    _, money_bank, scaled = scaled_dot_product_attention(
        torch.tensor([[2.0, 2.0]]), torch.tensor([[2.0, 3.0], [8.0, 8.0]]), torch.eye(2)
    )
    k = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])  # K_1, K_2
    _, w, _ = scaled_dot_product_attention(torch.tensor([[2.0, 3.0, 4.0, 1.0]]), k, k)
    wrong = raw / torch.tensor(2.0).sqrt()
    return [
        ("softmax([6, 4])", _v(raw.softmax(-1), 2)),
        ("softmax([6, 4] / √4)", _v(w[0], 2)),
        ("[6, 4] / √2, and its softmax", f"{_v(wrong, 2)}, {_v(wrong.softmax(-1), 2)}  (000 writes [3, 2] for it)"),
        ("money/bank [10, 32] / √2", _v(scaled[0], 2)),
        ("softmax of those", _v(money_bank[0], 7) + "  (the note's [0.2, 0.8] is not it)"),
    ]


def multi_head_shapes() -> Lines:
    """001: d_model = 512, h = 8 → d_k = 64; 8 heads of 2×64 concatenated to 2×512."""
    d_model, h, n = 512, 8, 2
    x = torch.zeros(1, n, d_model)
    split = x.view(1, n, h, d_model // h).transpose(1, 2)  # (1, h, n, d_k)
    return [
        ("x", str(tuple(x.shape))),
        ("split into heads", str(tuple(split.shape))),
        ("d_k = d_model / h", str(d_model // h)),
        ("Q Kᵀ multiply-adds, 8 heads", f"{h * n * n * (d_model // h)}"),
        ("Q Kᵀ multiply-adds, 1 head", f"{n * n * d_model}  (the same: not 8× cheaper)"),
    ]


def positional_by_hand() -> Lines:
    """000 d_model = 4 and 001 d_model = 6, rows 0 and 1."""
    return [
        ("PE d=4, pos 0", _v(sinusoidal_table(2, 4)[0], 4)),
        ("PE d=4, pos 1", _v(sinusoidal_table(2, 4)[1], 5) + "  (000's box writes 0.39 last)"),
        ("PE d=6, pos 1", _v(sinusoidal_table(2, 6)[1], 4)),
        ("ω_i for d=6", _v(torch.pow(10000.0, -torch.arange(0, 6, 2) / 6.0), 5) + "  (001 writes 0.01, 0.0001)"),
    ]


def embedding_plus_position() -> Lines:
    """000: "The" [0.1 0.2 0.3 0.4] + PE(0); "CAT" [0.5 0.6 0.7 0.8] + PE(1) — the note adds them as they are;
    the formula (and tt) multiplies the embedding by √d_model = √4 = 2 first."""
    words = torch.tensor([[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]]])
    add = PositionalEncoding(4, max_len=4, dropout=0.0)
    plain, scaled = add(words)[0], add(words * math.sqrt(4))[0]
    return [
        ("The · √4 + PE(0)", _v(scaled[0], 4)),
        ("CAT · √4 + PE(1)", _v(scaled[1], 4)),
        ("CAT + PE(1), without √d_model", _v(plain[1], 4) + "  (how the note adds them)"),
    ]


def add_and_norm() -> Lines:
    """000: CAT = [2, 4, 6, 8], γ = 1, β = 0 → x̂ = [−1.34, −0.45, 0.45, 1.34]."""
    x = torch.tensor([[2.0, 4.0, 6.0, 8.0]])
    out = AddNorm(4, dropout=0.0)(x / 2, x / 2)
    return [
        ("x + Sublayer(x)", _v(x[0], 1)),
        ("μ, σ²", f"{x.mean():.1f}, {x.var(unbiased=False):.1f}"),
        ("LayerNorm", _v(out[0], 2) + "  (mean 0, variance 1: not 'between 0 and 1')"),
    ]


def feed_forward() -> Lines:
    """Eq. 2 on a two-unit toy: FFN(x) = max(0, x W1 + b1) W2 + b2; 001's 512 → 2048 → 512 counts."""
    d, d_ff = 512, 2048
    ffn = 2 * d * d_ff + d_ff + d
    attn = 4 * d * d + 4 * d
    return [
        ("FFN parameters (base layer)", f"{ffn:,}"),
        ("attention parameters", f"{attn:,}"),
        ("FFN share of an encoder layer", f"{ffn / (ffn + attn + 4 * d):.1%}"),
        ("… of a decoder layer", f"{ffn / (ffn + 2 * attn + 6 * d):.1%}"),
    ]


SEED_DECODER_INPUTS = torch.tensor(
    [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2], [0.0, 0.0, 0.0, 0.0]]
)


def masks() -> Lines:
    """000 ④ MASK: three decoder inputs and a padding row, W = I, d_k = 4."""
    x = SEED_DECODER_INPUTS
    mask = decoder_mask(torch.tensor([[7, 8, 9, 0]]), pad_id=0)[0, 0]
    _, weights, scores = scaled_dot_product_attention(x, x, x, mask)
    _, unmasked, _ = scaled_dot_product_attention(x, x, x)  # the softmax over every key, the future's included
    after = unmasked * mask  # the wrong order: softmax first, then zero the masked weights
    return [
        ("combined mask", _v(mask.int(), 0)),
        ("Q Kᵀ (unscaled)", _v((x @ x.T)[:3, :3], 2) + "  (the note writes 1.9, 3.1, 5.1)"),
        ("masked Q Kᵀ / 2", _v(scores, 2)),
        ("softmax", _v(weights, 3)),
        ("rows sum to", _v(weights.sum(-1), 3)),
        ("softmax first, then masked: weights", _v(after, 3)),
        ("softmax first, then masked: rows sum to", _v(after.sum(-1), 3)),
    ]


def cross_attention() -> Lines:
    """Cross-attention: the decoder's query against the encoder's keys; toy: 2 source words, d_k = 2."""
    memory = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    q = torch.tensor([[2.0, 0.5]])
    out, w, s = scaled_dot_product_attention(q, memory, memory)
    try:  # 003's wiring: query and key from the encoder, value from the decoder
        scaled_dot_product_attention(memory, memory, q)
        backwards = "fits"
    except RuntimeError:
        backwards = f"weights {len(memory)} × {len(memory)} (source × source) · values {len(q)} × 2: no product"
    return [
        ("q (decoder)", _v(q[0], 1)),
        ("K = V (encoder, 2 source words)", _v(memory, 1)),
        ("scores", _v(s[0], 3)),
        ("weights", _v(w[0], 3)),
        ("context", _v(out[0], 3)),
        ("Q, K from the encoder, V from the decoder", backwards),
    ]


def final_softmax() -> Lines:
    """Logits over a 4-piece vocabulary to probabilities."""
    logits = torch.tensor([2.0, 1.0, 0.1, -1.0])
    return [("logits", _v(logits, 1)), ("softmax", _v(logits.softmax(-1), 3))]


def training() -> Lines:
    """§5.4: label smoothing ε = 0.1 over V = 4 pieces, and what it does to the loss of a right prediction."""
    from core.train.trainer import label_smoothed_loss

    v, eps = 4, 0.1
    logits = torch.tensor([[[2.0, 1.0, 0.1, -1.0]]])
    target = torch.tensor([[0]])
    smooth, _ = label_smoothed_loss(logits, target, pad_id=-100, epsilon=eps)
    plain, _ = label_smoothed_loss(logits, target, pad_id=-100, epsilon=0.0)
    return [
        ("target distribution, V = 4, ε = 0.1", _v(torch.full((v,), eps / v) + (1 - eps) * torch.eye(v)[0], 3)),
        ("loss with / without smoothing", f"{float(smooth):.4f} / {float(plain):.4f}"),
    ]


def beam() -> Lines:
    """tt's example: log p / lp, lp = ((5 + |Y|) / 6)^α. Raw log p always prefers the shorter hypothesis (each
    piece multiplies in a probability below 1); with α = 0.6 the longer one here wins, which is why α exists."""
    from core.decode.beam import length_penalty

    hyps = {"short (3 pieces)": (3, -1.2), "long (8 pieces)": (8, -1.5)}

    def winner(alpha: float) -> str:
        return max(hyps, key=lambda k: hyps[k][1] / length_penalty(hyps[k][0], alpha))

    return [
        ("log p, short / long", f"{hyps['short (3 pieces)'][1]} / {hyps['long (8 pieces)'][1]}"),
        ("lp(3), lp(8) at α = 0.6", f"{length_penalty(3, 0.6):.3f}, {length_penalty(8, 0.6):.3f}"),
        ("scores at α = 0.6", ", ".join(f"{lp / length_penalty(n, 0.6):.3f}" for n, lp in hyps.values())),
        ("winner at α = 0 (raw log p)", winner(0.0)),
        ("winner at α = 0.6", winner(0.6)),
    ]
