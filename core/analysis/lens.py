"""Logit lens: read the next-piece prediction off each decoder layer, not only the last.

The residual stream after decoder layer l (`Transformer.decode(..., return_layers=True)`) goes
through the model's own final norm and output projection (`decoder_norm`, then `generator`, the
tied embedding matrix of §3.4), exactly as the last layer's does: logits_l = W_out · norm(x_l)
(nostalgebraist 2020). In the paper's post-norm model each layer already ends in a LayerNorm and
`decoder_norm` is the identity; in a pre-norm model it is the stack's final LayerNorm.

This shows how early the decoder "knows" its next piece: at which layer the final choice first
becomes the top prediction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from core.analysis.reference import encode_pairs, pair_batches
from core.checkpoint import LoadedModel
from core.decode.trace import Candidate


@dataclass
class LensLayer:
    layer: int
    top: list[Candidate]  # the layer's k most probable next pieces
    rank: int  # rank of the piece actually output at this step (1 = top)
    prob: float  # its probability under this layer's lens


@dataclass
class LensStep:
    index: int  # output position t
    token: int
    piece: str  # the piece output at this step
    layers: list[LensLayer]  # one per decoder layer, bottom first; the last is the model's own prediction


def layer_logits(model, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    """(n_layers, B, T, vocab): the logit lens of every decoder layer, teacher-forced on tgt_in."""
    dec = model.decode(tgt_in, model.encode(src), return_layers=True)
    return torch.stack([model.generator(model.decoder_norm(x)) for x in dec.layers])


@torch.inference_mode()
def logit_lens(loaded: LoadedModel, src_ids: list[int], out_ids: list[int], *, top_k: int = 5) -> list[LensStep]:
    """Per step of producing `out_ids` (EOS last to include the stop), each layer's top-k."""
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    device = next(model.parameters()).device
    src_ids = list(src_ids) if src_ids and src_ids[-1] == cfg.eos_id else [*src_ids, cfg.eos_id]
    src = torch.tensor([src_ids[: cfg.max_len]], device=device)  # (1, S)
    out_ids = list(out_ids)[: cfg.max_len]
    tgt_in = torch.tensor([[cfg.bos_id] + out_ids[:-1]], device=device)  # (1, T)
    logprobs = layer_logits(model, src, tgt_in)[:, 0].float().log_softmax(-1).cpu()  # (L, T, vocab)
    top_ids = logprobs.topk(min(top_k, cfg.vocab_size), dim=-1).indices  # (L, T, k)
    steps = []
    for t, token in enumerate(out_ids):
        layers = []
        for layer in range(logprobs.size(0)):
            ids = top_ids[layer, t].tolist()
            lp = logprobs[layer, t]
            layers.append(
                LensLayer(
                    layer,
                    [Candidate(i, p, float(lp[i].exp()), float(lp[i])) for i, p in zip(ids, tok.pieces(ids))],
                    int((lp > lp[token]).sum()) + 1,
                    float(lp[token].exp()),
                )
            )
        steps.append(LensStep(t, token, tok.pieces([token])[0], layers))
    return steps


@dataclass
class LensAgreement:
    """Per decoder layer, over all teacher-forced steps of a file: the share of steps where the
    layer's top piece is the model's final top piece, and where it is the decoder's *input* piece
    at that position (the previous output: with tied embeddings, a layer that has not yet moved
    far from its input reads back the piece it was given)."""

    final: list[float]
    input: list[float]
    steps: int


@torch.inference_mode()
def layer_agreement(loaded: LoadedModel, pairs: Sequence[tuple[str, str]], *, max_tokens: int = 4000) -> LensAgreement:
    """`LensAgreement` of every decoder layer, teacher-forced on the references of `pairs`."""
    model, cfg = loaded.model, loaded.cfg
    device = next(model.parameters()).device
    final, copied, total = None, None, 0
    for batch in pair_batches(encode_pairs(loaded, pairs), cfg.pad_id, cfg.bos_id, max_tokens, device):
        top = layer_logits(model, batch.src, batch.tgt_in).argmax(-1)  # (L, B, T)
        real = batch.tgt_out != cfg.pad_id  # (B, T)
        same = ((top == top[-1:]) & real).sum((1, 2)).cpu()  # (L,)
        copy = ((top == batch.tgt_in) & real).sum((1, 2)).cpu()  # (L,)
        final = same if final is None else final + same
        copied = copy if copied is None else copied + copy
        total += int(real.sum())
    n = max(total, 1)
    return LensAgreement([float(x) / n for x in final], [float(x) / n for x in copied], total)
