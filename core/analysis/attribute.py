"""Attribution: how much each source piece and each earlier output piece moved each output piece's
log-probability, measured with gradients rather than read off attention.

For output step t, f_t = log p(y_t | x, y_<t) (teacher-forced on the output being explained).
Inputs are the token embeddings (√d_model-scaled, §3.4) of the source and of the decoder input
(BOS + y_<T); the positional encodings are added after them and stay as they are.

    input × gradient  (ixg)  a_i = x_i · ∂f_t/∂x_i                        (Shrikumar et al. 2016)
    integrated grads  (ig)   a_i = (x_i − x'_i) · mean_k ∂f_t/∂x_i(x' + α_k (x − x'))
                             over m = ig_steps nodes α_k: the midpoint rule on a grid
                             adapted per step to where f_t changes (see `_nodes`)
                             (Sundararajan et al. 2017)

The baseline x' is all-zero token embeddings on both sides: "no token, position kept". IG is
*complete*: the attributions of step t sum to f_t(x) − f_t(x') up to the integration error, which
`Attribution.completeness_error` reports (tests hold it under 5% with 32 steps on the test model;
the shipped model's paths are steeper and want more steps, see docs/analysis.md).

Gradients flow through the model's own forward pass: `Transformer.encode/decode` take the
embeddings as arguments (`src_embeds=`, `tgt_embeds=`); nothing is hooked or patched. All steps
(and all α of IG) of a sentence go through as one batch: row (t, α) is scored on its own f_t.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checkpoint import LoadedModel
from core.device import autocast_context
from core.errors import ConfigError

METHODS = ("ixg", "ig")


@dataclass
class Attribution:
    method: str  # "ixg" or "ig"
    source: torch.Tensor  # (T, S): step t's attribution to each source piece (EOS last)
    target: torch.Tensor  # (T, T): step t's attribution to decoder input j (BOS first); 0 for j > t
    ig_steps: int = 0
    delta: torch.Tensor | None = None  # (T,) f_t(x) − f_t(baseline), for IG

    def totals(self) -> torch.Tensor:
        """(T,) the sum of each step's attributions over source and target inputs."""
        return self.source.sum(-1) + self.target.sum(-1)

    def completeness_error(self) -> torch.Tensor:
        """(T,) |Σ attributions − Δ| / max(|Δ|, 1 nat) per step, Δ = f(x) − f(x') (IG only).

        Relative to Δ, except that a step whose log-probability barely moves between baseline and
        input (|Δ| < 1 nat) is measured against 1 nat: a relative error of a near-zero Δ says nothing.
        """
        if self.delta is None:
            raise ValueError("completeness is defined for integrated gradients only")
        return (self.totals() - self.delta).abs() / self.delta.abs().clamp(min=1.0)

    def describe(self) -> dict:
        """The JSON-able part (the tensors are stored beside it)."""
        delta = None if self.delta is None else [round(float(x), 6) for x in self.delta]
        return {"method": self.method, "ig_steps": self.ig_steps, "delta": delta}

    @classmethod
    def from_description(cls, d: dict, source: torch.Tensor, target: torch.Tensor) -> Attribution:
        if d["method"] not in METHODS:
            raise ValueError(f"unknown attribution method {d['method']!r}")
        delta = None if d.get("delta") is None else torch.tensor([float(x) for x in d["delta"]])
        return cls(str(d["method"]), source, target, int(d.get("ig_steps", 0)), delta)


def _step_logprobs(model, src, tgt_in, out, src_embeds, tgt_embeds, steps: torch.Tensor) -> torch.Tensor:
    """(R,) f_t of each row at its own step t = steps[r], the embeddings given as arguments.

    The output projection is re-applied to the one position each row explains (the residual stream
    comes back with `return_layers`): decode's own logits for every position are left out of the
    backward pass, which would otherwise cost a (R, T, vocab) matmul for gradients that are zero.
    """
    enc = model.encode(src, src_embeds=src_embeds)
    dec = model.decode(tgt_in, enc, tgt_embeds=tgt_embeds, return_layers=True)
    rows = torch.arange(steps.numel(), device=steps.device)
    x = model.decoder_norm(dec.layers[-1][rows, steps])  # (R, d_model): the same path as dec.logits
    picked = model.generator(x).float().log_softmax(-1)  # (R, vocab)
    return picked.gather(-1, out[rows, steps].unsqueeze(-1)).squeeze(-1)  # (R,)


def _nodes(f: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Quadrature nodes and weights on [0, 1], per step, adapted to where f_t changes.

    f (T, P+1): f_t on the probe grid α = p/P. The m intervals hold equal shares of a measure that
    is half |df| along the path and half uniform, so a steep stretch (a log-probability that jumps
    from −5 to −1 within Δα = 0.05 is common here) gets many nodes and a flat one still gets some.
    Nodes are the intervals' midpoints, weights their widths (they sum to 1). Returns (T, m) each.
    """
    t_len, p1 = f.shape
    grid = torch.linspace(0, 1, p1, dtype=torch.float64)  # (P+1,)
    change = f.double().diff(dim=1).abs()  # (T, P)
    change = change / change.sum(1, keepdim=True).clamp(min=1e-12)
    cdf = torch.cat(
        [torch.zeros(t_len, 1, dtype=torch.float64), (0.5 * change + 0.5 / (p1 - 1)).cumsum(1)], 1
    )  # (T, P+1)
    levels = torch.linspace(0, 1, m + 1, dtype=torch.float64)  # (m+1,)
    edges = torch.empty(t_len, m + 1, dtype=torch.float64)
    for t in range(t_len):  # invert the piecewise-linear cdf at each level
        i = torch.searchsorted(cdf[t], levels).clamp(1, p1 - 1)
        lo, hi = cdf[t, i - 1], cdf[t, i]
        edges[t] = grid[i - 1] + (levels - lo) / (hi - lo).clamp(min=1e-12) * (grid[i] - grid[i - 1])
    edges[:, 0], edges[:, -1] = 0.0, 1.0
    return ((edges[:, 1:] + edges[:, :-1]) / 2).float(), edges.diff(dim=1).float()


@torch.no_grad()
def _probe(model, src, tgt_in, out, x_src, x_tgt, p: int) -> torch.Tensor:
    """f_t on the probe grid α = 0, 1/p, ..., 1 (T, P+1): its ends give f(x) − f(x').

    The grid is the same for every step, so one row per α gives f_t of all T steps at once
    (teacher forcing: position t sees only y_<t)."""
    scale = torch.linspace(0, 1, p + 1, device=src.device)[:, None, None]  # (P+1, 1, 1)
    enc = model.encode(src.expand(p + 1, -1), src_embeds=scale * x_src)
    logits = model.decode(tgt_in.expand(p + 1, -1), enc, tgt_embeds=scale * x_tgt).logits  # (P+1, T, vocab)
    f_probe = logits.float().log_softmax(-1).gather(-1, out.expand(p + 1, -1).unsqueeze(-1)).squeeze(-1)
    return f_probe.T.cpu()  # (T, P+1)


def attribute(
    loaded: LoadedModel,
    src_ids: list[int],
    out_ids: list[int],
    *,
    method: str = "ig",
    ig_steps: int = 32,
    probe: int = 32,
    max_rows: int = 1024,
    precision: str = "fp32",
) -> Attribution:
    """Attributions of every output step of `out_ids` (EOS last to include the stopping step)
    to the source pieces `src_ids` (EOS appended if missing) and the decoder inputs.

    IG integrates with `ig_steps` nodes per step; `probe` > 0 first evaluates f_t on that many
    intervals of the path (a forward pass, no gradient) and places the nodes where f_t changes
    (`_nodes`); probe=0 is the plain midpoint rule α_k = (k + ½) / ig_steps.
    precision "bf16" autocasts the gradient passes (the probe, and so Δ, stays fp32): about 1.4×
    faster on a CPU with bf16 instructions, at the cost of gradient noise (see bench/README.md).
    """
    if method not in METHODS:
        raise ConfigError(f"unknown attribution method {method!r}; use ixg or ig")
    if method == "ig" and ig_steps < 1:
        raise ConfigError(f"--ig-steps must be at least 1, got {ig_steps}")
    model, cfg = loaded.model, loaded.cfg
    device = next(model.parameters()).device
    src_ids = list(src_ids)
    if not src_ids or src_ids[-1] != cfg.eos_id:
        src_ids.append(cfg.eos_id)
    src_ids, out_ids = src_ids[: cfg.max_len], list(out_ids)[: cfg.max_len]
    t_len, s_len = len(out_ids), len(src_ids)
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt_in = torch.tensor([[cfg.bos_id] + out_ids[:-1]], device=device)  # (1, T)
    out = torch.tensor([out_ids], device=device)  # (1, T)
    with torch.no_grad():
        x_src = model.src_embed(src)[0]  # (S, d_model)
        x_tgt = model.tgt_embed(tgt_in)[0]  # (T, d_model)

    def scaled_f(steps: torch.Tensor, alphas: torch.Tensor, t_end: int, grad: bool):
        """f at rows (steps[r], alphas[r]); with grad, also the embedding inputs to differentiate."""
        scale = alphas.to(device)[:, None, None]  # (R, 1, 1)
        es = (scale * x_src).requires_grad_(grad)  # (R, S, d_model)
        et = (scale * x_tgt[:t_end]).requires_grad_(grad)  # (R, t_end, d_model)
        r = steps.numel()
        f = _step_logprobs(
            model,
            src.expand(r, -1),
            tgt_in[:, :t_end].expand(r, -1),
            out[:, :t_end].expand(r, -1),
            es,
            et,
            steps.to(device),
        )  # (R,)
        return f, es, et

    delta = None
    if method == "ixg":
        alphas, weights = torch.ones(t_len, 1), torch.ones(t_len, 1)
    else:
        f_probe = _probe(model, src, tgt_in, out, x_src, x_tgt, max(probe, 1))
        delta = f_probe[:, -1] - f_probe[:, 0]
        if probe > 0:
            alphas, weights = _nodes(f_probe, ig_steps)  # (T, m) each
        else:
            mid = (torch.arange(ig_steps) + 0.5) / ig_steps
            alphas, weights = mid.expand(t_len, -1), torch.full((t_len, ig_steps), 1.0 / ig_steps)
    # Rows (t, node), t-major: each row is scored on its own step's f_t, so one backward of the sum
    # gives every row its own gradient (rows do not interact). A chunk of rows runs the decoder only
    # up to its last row's step: later positions cannot change f_t (the look-ahead mask). Big chunks
    # still win on a CPU (one 512-row pass took half the time of eight 64-row ones).
    m = alphas.size(1)
    all_steps = torch.arange(t_len).repeat_interleave(m)  # (T·m,)
    all_alphas, all_weights = alphas.reshape(-1), weights.reshape(-1)  # (T·m,)
    grad_src = torch.zeros(t_len, s_len, x_src.size(-1), device=device)  # (T, S, d_model)
    grad_tgt = torch.zeros(t_len, t_len, x_tgt.size(-1), device=device)  # (T, T, d_model)
    with torch.enable_grad(), autocast_context(device, precision):
        for start in range(0, all_steps.numel(), max_rows):
            steps = all_steps[start : start + max_rows]
            t_end = int(steps.max()) + 1
            f, es, et = scaled_f(steps, all_alphas[start : start + max_rows], t_end, True)
            gs, gt = (g.float() for g in torch.autograd.grad(f.sum(), [es, et]))
            w = all_weights[start : start + max_rows].to(device)[:, None, None]  # (R, 1, 1)
            grad_src.index_add_(0, steps.to(device), gs * w)
            grad_tgt[:, :t_end].index_add_(0, steps.to(device), gt * w)
    source = (x_src[None] * grad_src).sum(-1)  # (T, S)
    target = (x_tgt[None] * grad_tgt).sum(-1)  # (T, T); the future (j > t) gets no gradient: 0
    return Attribution(method, source.detach().cpu(), target.detach().cpu(), ig_steps if method == "ig" else 0, delta)


def agreement_with_attention(attribution: Attribution, cross: torch.Tensor) -> list[bool]:
    """Per output step: does the source piece with the largest |attribution| get the most
    cross-attention too? cross (T, S), e.g. `core.decode.trace.attention_matrix(source, steps, "cross", -1, None)`."""
    return (attribution.source.abs().argmax(-1) == cross.argmax(-1)).tolist()
