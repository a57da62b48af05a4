"""tt's own toys for the topics the notes name without an example: cost, residuals, the norms, dropout, the
whole model's shapes, Adam, the learning-rate curve and BLEU. Every output is computed by tt's code.
"""

from __future__ import annotations

import torch

from core.learn.toys import Lines, _v

BASE = {"d_model": 512, "h": 8, "d_ff": 2048, "layers": 6, "vocab": 37000}  # the paper's base model (Table 3)


def cost() -> Lines:
    """Self-attention's work and an RNN's path: multiply-adds of one base layer at three lengths, counted
    from the products' shapes; the path between the first and the last word."""
    d, d_ff = BASE["d_model"], BASE["d_ff"]
    lines = []
    for n in (10, 100, 1000):
        attention = 2 * n * n * d  # Q Kᵀ and the weights times V
        linear = n * (4 * d * d + 2 * d * d_ff)  # W^Q, W^K, W^V, W^O and the FFN
        lines.append((f"N = {n}: N² part / linear part", f"{attention:,} / {linear:,} ({attention / linear:.0%})"))
    return lines + [
        ("N where they match", f"2·d_model + d_ff = {2 * d + d_ff:,}"),
        ("steps from word 1 to word N", "self-attention 1 (one weight), an RNN N − 1 (one per step)"),
    ]


def residual() -> Lines:
    """Why residuals: the gradient through six layers, each scaling it by 0.1, with and without x + F(x)."""
    x = torch.tensor(1.0, requires_grad=True)
    plain, skip = x, x
    for _ in range(6):
        plain = 0.1 * plain  # F(x) = 0.1 x: a layer whose own gradient is small
        skip = skip + 0.1 * skip  # x + F(x)
    (g_plain,) = torch.autograd.grad(plain, x)
    (g_skip,) = torch.autograd.grad(skip, x)
    return [
        ("6 layers F(x) = 0.1·x: ∂out/∂x", f"{float(g_plain):.0e}  (0.1⁶: the signal vanishes)"),
        ("6 layers x + F(x): ∂out/∂x", f"{float(g_skip):.3f}  ((1 + 0.1)⁶: the 1 of the skip path survives)"),
    ]


def norms() -> Lines:
    """Layer norm against batch norm on a batch of two sentences of three and two words (one pad), d = 2."""
    x = torch.tensor([[[1.0, 3.0], [2.0, 6.0], [3.0, 9.0]], [[4.0, 0.0], [6.0, 2.0], [0.0, 0.0]]])  # (B, T, d)
    real = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool)
    ln = torch.nn.functional.layer_norm(x, (2,))  # each word by its own mean and variance
    alone = torch.nn.functional.layer_norm(x[:1], (2,))

    def batch_norm(rows: torch.Tensor) -> torch.Tensor:  # each feature by the batch's mean and variance
        return (rows - rows.mean(0)) / rows.var(0, unbiased=False).add(1e-5).sqrt()

    with_pad = batch_norm(x.reshape(6, 2))[:3]  # sentence 1's words, normalised with the other sentence and a pad
    without_pad = batch_norm(x[real])[:3]
    return [
        ("layer norm, sentence 1 word 1", _v(ln[0, 0], 3) + f"; alone in its batch {_v(alone[0, 0], 3)}"),
        ("batch norm, sentence 1 word 1", _v(with_pad[0], 3) + f"; pad left out {_v(without_pad[0], 3)}"),
    ]


def dropout() -> Lines:
    """Dropout p = 0.1 on ten ones in training: some become 0, the rest 1 / 0.9; at inference nothing changes."""
    drop = torch.nn.Dropout(0.1)
    with torch.random.fork_rng():
        torch.manual_seed(7)  # a draw that drops one of the ten, as p = 0.1 does on average
        trained = drop.train()(torch.ones(10))
    return [
        ("training, p = 0.1", _v(trained, 3)),
        ("its mean", f"{float(trained.mean()):.3f}  (kept ones are scaled by 1/(1 − p), so the mean stays 1)"),
        ("inference", _v(drop.eval()(torch.ones(10)), 0)),
    ]


def whole() -> Lines:
    """The base model's tensors, source to probabilities, for a 10-piece source and a 12-piece output."""
    d, n, S, T, V = BASE["d_model"], BASE["layers"], 10, 12, BASE["vocab"]
    return [
        ("source pieces → E·√d + PE", f"{S} → {S} × {d}"),
        (f"{n} encoder layers (self-attention, FFN)", f"{S} × {d} → memory {S} × {d}"),
        ("<s> + output so far → E·√d + PE", f"{T} × {d}"),
        (f"{n} decoder layers (masked self, cross on memory, FFN)", f"{T} × {d} → {T} × {d}"),
        ("linear (tied to E) + softmax", f"{T} × {V}: a distribution per position"),
    ]


def adam() -> Lines:
    """One Adam step from zero moments with the paper's β1 = 0.9, β2 = 0.98, ε = 1e-9, lr 0.001: the bias
    correction makes the first step ≈ lr · sign(g), whatever the gradient's size; and the schedule's peak."""
    lines = []
    for g in (0.001, 100.0):
        w = torch.zeros(1, requires_grad=True)
        opt = torch.optim.Adam([w], lr=0.001, betas=(0.9, 0.98), eps=1e-9)
        w.grad = torch.tensor([g])
        opt.step()
        m, v = 0.1 * g, 0.02 * g * g
        lines.append((f"g = {g}: m, v, first step", f"{m:g}, {v:g}, {float(-w.detach()[0]):.6f}"))
    from core.train.trainer import noam_lr

    return lines + [("peak lr, d_model 512, warm-up 4000", f"{noam_lr(4000, 512, 4000):.6f}  (001 writes 0.000707)")]


def bleu() -> Lines:
    """BLEU of one hypothesis against one reference: n-gram precisions, the brevity penalty, their mean."""
    from sacrebleu.metrics import BLEU

    hyp, ref = "the cat sleeps on the sofa .", "the cat is sleeping on the sofa ."
    score = BLEU(effective_order=True).sentence_score(hyp, [ref])
    return [
        ("hypothesis / reference", f"{hyp} / {ref}"),
        ("1- to 4-gram precisions", ", ".join(f"{p:.1f}" for p in score.precisions) + " %"),
        ("brevity penalty", f"{score.bp:.3f} ({score.sys_len} words for {score.ref_len})"),
        ("BLEU = bp · geometric mean", f"{score.score:.1f}"),
    ]
