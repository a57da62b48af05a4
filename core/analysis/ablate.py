"""Head ablation: switch one attention head off and measure what breaks (Michel et al. 2019,
"Are Sixteen Heads Really Better than One?"; Voita et al. 2019 on the heads of MT models).

A head is switched off by a `HeadMask` argument of the forward pass (its output is zeroed before
W^O, §3.2.2); nothing is hooked or patched. Two metrics:

    logprob  the mean log-probability of the references, teacher-forced (cheap: one batched pass)
    bleu     corpus BLEU (sacreBLEU) of a greedy re-decode of the sources, against the references

For logprob, a head of layer L cannot change anything below L: the model runs once under the
base mask, keeping each layer's input, and each ablation restarts from its first changed layer
(`reference_logprob`). Ablations restarting at the same layer go through together: the batch is
repeated once per ablation along the batch dimension, each copy with its own row of the head mask.

`prune_curve` removes heads one after another and measures the metric after each removal: how
many heads the model can lose before it breaks. In which order:

    once    by increasing single-ablation damage (Michel et al. §4: importance estimated once,
            then heads pruned in that order); the whole curve is one batched evaluation
    greedy  at each step every remaining head is tried on top of those already off, and the one
            whose removal hurts least goes; each step is one batched evaluation
            of all the candidates (`ablate_heads` with `base_off`), n + (n−1) + … + 1 in all
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from core.analysis.reference import encode_pairs, pair_batches
from core.checkpoint import LoadedModel
from core.errors import ConfigError
from core.model.attention import FAMILIES, Head, HeadMask, n_layers_of
from core.model.masks import padding_mask

METRICS = ("logprob", "bleu")
PRUNE_ORDERS = ("once", "greedy")


@dataclass
class HeadEffect:
    head: Head
    value: float  # the metric with this head off (and `Ablation.base_off` off too)
    delta: float  # value − the metric with all of them on


@dataclass
class Ablation:
    metric: str
    intact: float  # the metric of the model with only `base_off` off (none: the model as trained)
    effects: list[HeadEffect]  # one per ablated head, in model order
    sentences: int
    base_off: list[Head]


@dataclass
class PruneStep:
    removed: int  # heads off so far
    head: Head | None  # the head removed at this step (None for the intact model)
    value: float


def all_heads(cfg) -> list[Head]:
    """Every head: encoder self, decoder self, cross × layer × head."""
    return [Head(f, i, j) for f in FAMILIES for i in range(n_layers_of(cfg, f)) for j in range(cfg.h)]


def head_mask(cfg, off: Iterable[Head]) -> HeadMask:
    """The mask with heads `off` switched off, every other head on."""
    mask = HeadMask.ones(cfg)
    for h in off:
        mask = mask.off(h.family, h.layer, h.head)
    return mask


def _stack(masks: Sequence[HeadMask], repeat: int) -> HeadMask:
    """One batched mask: each of `masks` repeated for `repeat` consecutive rows. (M·B, L, h) per family."""

    def rows(family: str) -> torch.Tensor:
        table = torch.stack([getattr(m, family) for m in masks])  # (M, L, h)
        return table.repeat_interleave(repeat, dim=0)  # (M·B, L, h)

    return HeadMask(rows("encoder_self"), rows("decoder_self"), rows("cross"))


def _first_change(a: torch.Tensor, b: torch.Tensor) -> int:
    """The first layer where two (L, h) masks differ; L when they are equal."""
    changed = (a != b).any(-1).nonzero()
    return int(changed[0]) if changed.numel() else a.size(0)


def _encoder_from(model, x, src_mask, start: int, mask: HeadMask, inputs: list | None = None) -> torch.Tensor:
    """Encoder layers start.. on x, their residual stream before the final norm, through the layers' own
    forward. `inputs` collects each layer's input (and, last, the output): a later start resumes there."""
    for i in range(start, len(model.encoder_layers)):
        if inputs is not None:
            inputs.append(x)
        x, _ = model.encoder_layers[i](x, src_mask=src_mask, head_mask=mask.layer("encoder_self", i))
    if inputs is not None:
        inputs.append(x)
    return x


def _decoder_from(model, x, memory, src_mask, start: int, mask: HeadMask, inputs: list | None = None) -> torch.Tensor:
    """Decoder layers start.. on x (teacher-forced, look-ahead mask), as `_encoder_from`."""
    for i in range(start, len(model.decoder_layers)):
        if inputs is not None:
            inputs.append(x)
        x, _, _ = model.decoder_layers[i](
            x,
            memory=memory,
            src_mask=src_mask,
            causal=True,
            self_head_mask=mask.layer("decoder_self", i),
            cross_head_mask=mask.layer("cross", i),
        )
    if inputs is not None:
        inputs.append(x)
    return x


def _sum_logprob(model, x: torch.Tensor, out: torch.Tensor, pad_id: int, m: int) -> torch.Tensor:
    """(M,) summed log p(out) of the M blocks of rows of the final residual stream x (M·B, T, d_model).

    Only non-pad positions go through the output projection; log p = logit − logsumexp(logits)
    does not materialise a second (N, vocab) tensor as log_softmax would.
    """
    keep = out != pad_id  # (M·B, T)
    logits = model.generator(model.decoder_norm(x[keep])).float()  # (N, vocab)
    lp = logits.gather(-1, out[keep].unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)  # (N,)
    block = torch.arange(m, device=out.device).repeat_interleave(out.size(0) // m)[:, None].expand_as(out)[keep]
    return torch.zeros(m, dtype=torch.float64, device=out.device).index_add_(0, block, lp.double())


@torch.inference_mode()
def reference_logprob(
    loaded: LoadedModel,
    pairs: Sequence[tuple[str, str]],
    masks: Sequence[HeadMask],
    *,
    max_tokens: int = 4000,
    max_rows_tokens: int = 12000,
) -> list[float]:
    """Mean log p(reference | source) per sentence, under each of `masks` (one value per mask).

    A head of layer L changes nothing below L. So the model runs once under masks[0] (the base),
    keeping each layer's input, and every other mask restarts from the first layer where it differs
    from the base: an encoder-side change at encoder layer L re-runs encoder layers L.. (then the
    whole decoder on its memory); a decoder-side change at decoder layer L re-runs only decoder
    layers L.. on the base memory. Masks restarting at the same layer go through together, each
    copy of the batch with its own row of the head mask.

    max_tokens: source + target pieces per batch of pairs; max_rows_tokens: target pieces per
    decoder pass (the batch × ablations), which bounds the (rows, T, vocab) logits in memory.
    """
    model, cfg = loaded.model, loaded.cfg
    device = next(model.parameters()).device
    totals = torch.zeros(len(masks), dtype=torch.float64)
    if not masks:
        return []
    ids = encode_pairs(loaded, pairs)
    base, n_enc, n_dec = masks[0], len(model.encoder_layers), len(model.decoder_layers)
    enc_start = [_first_change(m.encoder_self, base.encoder_self) for m in masks]
    dec_start = [
        0 if e < n_enc else min(_first_change(m.decoder_self, base.decoder_self), _first_change(m.cross, base.cross))
        for m, e in zip(masks, enc_start)
    ]
    for batch in pair_batches(ids, cfg.pad_id, cfg.bos_id, max_tokens, device):
        b, t = batch.tgt_in.shape
        group = max(1, max_rows_tokens // (b * t))  # ablations per pass
        src_mask = padding_mask(batch.src, cfg.pad_id)  # (B, 1, 1, S)
        enc_in: list[torch.Tensor] = []
        _encoder_from(model, model.src_pos(model.src_embed(batch.src)), src_mask, 0, base, enc_in)
        memory_of = {i: model.encoder_norm(enc_in[-1]) for i, e in enumerate(enc_start) if e == n_enc}  # (B, S, d)
        for layer in range(n_enc):
            todo = [i for i, e in enumerate(enc_start) if e == layer]
            for start in range(0, len(todo), group):
                chunk = todo[start : start + group]
                m = len(chunk)
                x = _encoder_from(
                    model,
                    enc_in[layer].repeat(m, 1, 1),
                    src_mask.repeat(m, 1, 1, 1),
                    layer,
                    _stack([masks[i] for i in chunk], b),
                )  # (M·B, S, d_model)
                memory = model.encoder_norm(x).view(m, b, *x.shape[1:])  # (M, B, S, d_model)
                memory_of.update(zip(chunk, memory))
        dec_in: list[torch.Tensor] = []
        _decoder_from(model, model.tgt_pos(model.tgt_embed(batch.tgt_in)), memory_of[0], src_mask, 0, base, dec_in)
        for layer in range(n_dec + 1):
            todo = [i for i, d in enumerate(dec_start) if d == layer]
            for start in range(0, len(todo), group):
                chunk = todo[start : start + group]
                m = len(chunk)
                memory = torch.cat([memory_of[i] for i in chunk])  # (M·B, S, d_model)
                x = _decoder_from(
                    model,
                    dec_in[layer].repeat(m, 1, 1),
                    memory,
                    src_mask.repeat(m, 1, 1, 1),
                    layer,
                    _stack([masks[i] for i in chunk], b),
                )  # (M·B, T, d_model)
                totals[chunk] += _sum_logprob(model, x, batch.tgt_out.repeat(m, 1), cfg.pad_id, m).cpu()
    return (totals / max(len(pairs), 1)).tolist()


@torch.inference_mode()
def greedy_bleu(
    loaded: LoadedModel, pairs: Sequence[tuple[str, str]], mask: HeadMask, *, batch_size: int = 64
) -> float:
    """Corpus BLEU of greedy translations of the sources made with `mask`, against the references."""
    from core.decode.search import greedy, pad_batch
    from core.evaluate import corpus_scores

    cfg, tok = loaded.cfg, loaded.tokenizer
    device = next(loaded.model.parameters()).device
    ids = encode_pairs(loaded, pairs)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i][0]))
    out = [""] * len(ids)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        src = pad_batch([ids[i][0] for i in rows], cfg.pad_id, device)  # (B, S)
        for i, hyp in zip(rows, greedy(loaded.model, src, head_mask=mask)):
            out[i] = tok.decode(hyp.tokens)
    return corpus_scores(out, [[r for _, r in pairs]]).bleu


def evaluate(
    loaded: LoadedModel, pairs: Sequence[tuple[str, str]], masks: Sequence[HeadMask], metric: str
) -> list[float]:
    """The metric under each mask."""
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r}; use logprob or bleu")
    if metric == "logprob":
        return reference_logprob(loaded, pairs, masks)
    return [greedy_bleu(loaded, pairs, m) for m in masks]


def ablate_heads(
    loaded: LoadedModel,
    pairs: Sequence[tuple[str, str]],
    *,
    metric: str = "logprob",
    heads: Sequence[Head] | None = None,
    base_off: Sequence[Head] = (),
) -> Ablation:
    """The metric with each head of `heads` (default: all) off in turn, on top of `base_off`."""
    cfg = loaded.cfg
    heads = list(heads) if heads is not None else [h for h in all_heads(cfg) if h not in base_off]
    masks = [head_mask(cfg, base_off)] + [head_mask(cfg, [*base_off, h]) for h in heads]
    values = evaluate(loaded, pairs, masks, metric)
    intact = values[0]
    effects = [HeadEffect(h, v, v - intact) for h, v in zip(heads, values[1:])]
    return Ablation(metric, intact, effects, len(pairs), list(base_off))


def prune_curve(
    loaded: LoadedModel,
    pairs: Sequence[tuple[str, str]],
    *,
    metric: str = "logprob",
    order: str = "once",
    max_removed: int | None = None,
    ablation: Ablation | None = None,
) -> list[PruneStep]:
    """Remove heads cumulatively, least damaging first, measuring each time: the intact model, then
    one step per head off, up to `max_removed` (None: every head).

    order "once" ranks the heads by single-head ablation; "greedy" re-ranks the remaining heads after
    each removal, on top of those already off. Equal values go in model order (`all_heads`) in both.
    `ablation`, when given, is the single-head ablation of the intact model (it is both orders' first step).
    """
    if order not in PRUNE_ORDERS:
        raise ConfigError(f"unknown pruning order {order!r}; use once or greedy")
    ablation = ablation or ablate_heads(loaded, pairs, metric=metric)
    n = len(ablation.effects) if max_removed is None else min(max_removed, len(ablation.effects))
    if order == "once":
        removed = [e.head for e in sorted(ablation.effects, key=lambda e: -e.delta)][:n]  # stable: model order on ties
        values = evaluate(loaded, pairs, [head_mask(loaded.cfg, removed[:k]) for k in range(1, n + 1)], metric)
    else:
        removed, values, step = [], [], ablation
        while len(removed) < n:
            if removed:
                step = ablate_heads(
                    loaded,
                    pairs,
                    metric=metric,
                    heads=[e.head for e in step.effects if e.head != removed[-1]],
                    base_off=removed,
                )
            best = max(step.effects, key=lambda e: e.value)  # max keeps the first of equals: model order
            removed.append(best.head)
            values.append(best.value)
    return [PruneStep(0, None, ablation.intact)] + [
        PruneStep(k + 1, h, v) for k, (h, v) in enumerate(zip(removed, values))
    ]
