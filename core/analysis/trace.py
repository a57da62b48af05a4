"""What one decoding step saw: small dataclasses returned only when asked.

`tt translate --json`, the attention heatmap and `tt inspect` all read these same objects.
Attention tensors are for one sentence (no batch dimension) and live on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from core.data.tokenizer import Tokenizer
from core.errors import TTError


@dataclass(frozen=True)
class Candidate:
    token: int
    piece: str
    prob: float  # under the step's temperature
    logprob: float  # log p under the model itself (temperature 1)


@dataclass
class SourceTrace:
    text: str
    tokens: list[int]  # piece ids fed to the encoder, EOS last
    pieces: list[str]
    encoder_self: list[torch.Tensor] = field(default_factory=list)  # per layer (h, S, S)


@dataclass
class StepTrace:
    index: int  # output position t (0 = the first piece after BOS)
    token: int  # the piece chosen at this step
    piece: str
    logprob: float  # log p(token | source, output so far) under the model
    candidates: list[Candidate]  # the top-k of the distribution, most probable first
    forced: bool = False  # chosen by the caller (what-if), not by the decoding rule
    decoder_self: list[torch.Tensor] = field(default_factory=list)  # per layer (h, t+1): masked self-attention
    cross: list[torch.Tensor] = field(default_factory=list)  # per layer (h, S): attention over the source
    logits: torch.Tensor | None = None  # (vocab,) raw scores, so a view can re-shape the distribution


def top_candidates(
    logits: torch.Tensor, tokenizer: Tokenizer, k: int, temperature: float = 1.0
) -> list[Candidate]:
    """The k most probable pieces under softmax(logits / temperature), most probable first.

    `logprob` stays the model's own (temperature 1), so a re-shaped view never changes a score.
    """
    if temperature <= 0:
        raise TTError(f"temperature must be positive, got {temperature}")
    logits = logits.float()
    logprobs = logits.log_softmax(-1)  # (vocab,)
    probs = (logits / temperature).softmax(-1)  # (vocab,)
    k = max(1, min(k, logits.numel()))
    top_p, top_i = probs.topk(k)
    ids = top_i.tolist()
    pieces = tokenizer.pieces(ids)
    return [
        Candidate(token=i, piece=piece, prob=p, logprob=float(logprobs[i]))
        for i, piece, p in zip(ids, pieces, top_p.tolist())
    ]


def entropy(step: StepTrace) -> float:
    """Entropy (nats) of the step's full next-token distribution: how unsure the model was."""
    if step.logits is None:
        return math.nan
    logp = step.logits.float().log_softmax(-1)
    return float(-(logp.exp() * logp).sum())


def attention_matrix(
    source: SourceTrace, steps: list[StepTrace], family: str, layer: int, head: int | None
) -> torch.Tensor:
    """One head's (or, head=None, the mean of the heads') attention as a (queries, keys) matrix.

    cross: (T, S), row t = what step t's query read in the source; decoder_self: (T, T), row t
    covers the t+1 positions step t could see, the masked future left at 0; encoder_self: (S, S).
    """

    def pick(w: torch.Tensor) -> torch.Tensor:
        return w.mean(0) if head is None else w[head]  # (h, ...) -> (...)

    if family == "encoder_self":
        return pick(source.encoder_self[layer])  # (S, S)
    if not steps:
        n_keys = len(source.tokens) if family == "cross" else 0
        return torch.zeros(0, n_keys)
    if family == "cross":
        return torch.stack([pick(s.cross[layer]) for s in steps])  # (T, S)
    out = torch.zeros(len(steps), len(steps))  # (T, T)
    for t, s in enumerate(steps):
        out[t, : t + 1] = pick(s.decoder_self[layer])
    return out


def attention_grid(source: SourceTrace, steps: list[StepTrace], family: str, query: int) -> torch.Tensor:
    """Every layer × head at a glance for one query: (n_layers · h, keys), layer-major."""
    if family == "encoder_self":
        rows = [w[:, query] for w in source.encoder_self]  # per layer (h, S)
    else:
        rows = getattr(steps[query], "cross" if family == "cross" else "decoder_self")  # per layer (h, keys)
    return torch.cat(rows)  # (n_layers · h, keys)
