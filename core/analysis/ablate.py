"""Head ablation: switch one attention head off and measure what breaks (Michel et al. 2019,
"Are Sixteen Heads Really Better than One?"; Voita et al. 2019 on the heads of MT models).

A head is switched off by a `HeadMask` argument of the forward pass (its output is zeroed before
W^O, §3.2.2); nothing is hooked or patched. Two metrics:

    logprob  the mean log-probability of the references, teacher-forced (cheap: one batched pass)
    bleu     corpus BLEU (sacreBLEU) of a greedy re-decode of the sources, against the references

For logprob, all ablations of a batch of pairs go through the model together: the batch is
repeated once per ablation along the batch dimension, each copy with its own row of the head mask.
The encoder runs once per *distinct encoder mask* (so the 24 decoder-side ablations share one
encoding), and its memory is repeated for the decoder.

`prune_curve` removes heads one after another, in order of increasing single-ablation damage
(Michel et al. §4: importance estimated once, then heads pruned in that order), and measures the
metric after each removal: how many heads the model can lose before it breaks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from core.analysis.reference import encode_pairs, pair_batches
from core.checkpoint import LoadedModel
from core.errors import ConfigError
from core.model.attention import HeadMask
from core.model.transformer import Encoded

METRICS = ("logprob", "bleu")
FAMILIES = ("encoder_self", "decoder_self", "cross")


@dataclass(frozen=True)
class Head:
    family: str  # encoder_self, decoder_self or cross
    layer: int
    head: int

    def __str__(self) -> str:
        return f"{self.family} L{self.layer}H{self.head}"


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
    layers = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    return [Head(f, i, j) for f in FAMILIES for i in range(layers[f]) for j in range(cfg.h)]


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


@torch.inference_mode()
def reference_logprob(
    loaded: LoadedModel, pairs: Sequence[tuple[str, str]], masks: Sequence[HeadMask], *,
    max_tokens: int = 4000, max_rows_tokens: int = 12000,
) -> list[float]:
    """Mean log p(reference | source) per sentence, under each of `masks` (one value per mask).

    max_tokens: source + target pieces per batch of pairs; max_rows_tokens: target pieces per
    decoder pass (the batch × ablations), which bounds the (rows, T, vocab) logits in memory.
    """
    model, cfg = loaded.model, loaded.cfg
    device = next(model.parameters()).device
    totals = torch.zeros(len(masks), dtype=torch.float64)
    ids = encode_pairs(loaded, pairs)
    # Distinct encoder masks: decoder-side ablations all share the intact encoder's memory.
    enc_keys = [tuple(m.encoder_self.flatten().tolist()) for m in masks]
    distinct = list(dict.fromkeys(enc_keys))
    enc_of = [distinct.index(k) for k in enc_keys]
    enc_masks = [masks[enc_keys.index(k)] for k in distinct]
    for batch in pair_batches(ids, cfg.pad_id, cfg.bos_id, max_tokens, device):
        b, t = batch.tgt_in.shape
        group = max(1, max_rows_tokens // (b * t))  # ablations per decoder pass
        memories = []
        for start in range(0, len(enc_masks), group):
            chunk = enc_masks[start : start + group]
            enc = model.encode(batch.src.repeat(len(chunk), 1), head_mask=_stack(chunk, b))  # (U·B, S, d_model)
            memories.append(enc.memory.view(len(chunk), b, *enc.memory.shape[1:]))  # (U, B, S, d_model)
        memory = torch.cat(memories)  # (U_all, B, S, d_model)
        src_mask = enc.src_mask[:b]  # (B, 1, 1, S)
        for start in range(0, len(masks), group):
            chunk = list(range(start, min(start + group, len(masks))))
            m = len(chunk)
            enc = Encoded(memory[[enc_of[i] for i in chunk]].flatten(0, 1), src_mask.repeat(m, 1, 1, 1))  # (M·B, S, d)
            logits = model.decode(batch.tgt_in.repeat(m, 1), enc, head_mask=_stack([masks[i] for i in chunk], b)).logits
            out = batch.tgt_out.repeat(m, 1)  # (M·B, T)
            lp = logits.float().log_softmax(-1).gather(-1, out.unsqueeze(-1)).squeeze(-1)  # (M·B, T)
            lp = lp.masked_fill(out == cfg.pad_id, 0.0).view(m, b, t).sum((1, 2))  # (M,)
            totals[chunk] += lp.double().cpu()
    return (totals / max(len(pairs), 1)).tolist()


@torch.inference_mode()
def greedy_bleu(loaded: LoadedModel, pairs: Sequence[tuple[str, str]], mask: HeadMask, *, batch_size: int = 64) -> float:
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


def evaluate(loaded: LoadedModel, pairs: Sequence[tuple[str, str]], masks: Sequence[HeadMask], metric: str) -> list[float]:
    """The metric under each mask."""
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r}; use logprob or bleu")
    if metric == "logprob":
        return reference_logprob(loaded, pairs, masks)
    return [greedy_bleu(loaded, pairs, m) for m in masks]


def ablate_heads(
    loaded: LoadedModel, pairs: Sequence[tuple[str, str]], *, metric: str = "logprob",
    heads: Sequence[Head] | None = None, base_off: Sequence[Head] = (),
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
    loaded: LoadedModel, pairs: Sequence[tuple[str, str]], *, metric: str = "logprob", ablation: Ablation | None = None,
) -> list[PruneStep]:
    """Remove heads cumulatively, least damaging first (by single-head ablation), measuring each time."""
    ablation = ablation or ablate_heads(loaded, pairs, metric=metric)
    order = [e.head for e in sorted(ablation.effects, key=lambda e: -e.delta)]
    masks = [head_mask(loaded.cfg, order[:k]) for k in range(1, len(order) + 1)]
    values = evaluate(loaded, pairs, masks, metric)
    return [PruneStep(0, None, ablation.intact)] + [PruneStep(k + 1, h, v) for k, (h, v) in enumerate(zip(order, values))]
