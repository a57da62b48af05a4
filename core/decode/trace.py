"""What the model did at each step: the dataclasses every view reads, and the one builder of them.

`tt translate --json`, the attention heatmap and `tt inspect` all read these same objects, and they
are all built by `step_trace`: step by step over the KV cache (core.decode.stepper) or from one
teacher-forced pass (`trace_steps`). Causality makes the two agree: the look-ahead mask hides
every later position, so row t of a teacher-forced pass is what incremental step t saw.
Attention tensors are for one sentence (no batch dimension), float32, on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from core.checkpoint import LoadedModel
from core.data.tokenizer import Tokenizer
from core.decode.search import check_sampling
from core.errors import TTError
from core.model.attention import HeadMask
from core.model.transformer import Decoded, Encoded


@dataclass(frozen=True)
class Candidate:
    token: int
    piece: str
    prob: float  # p under the model (temperature 1); a view that re-shapes calls top_candidates
    logprob: float  # log p under the model (temperature 1), at every temperature


BOS_PIECE = "<s>"  # the decoder's first input; a saved trace keeps no tokenizer to name it


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
    candidates: list[Candidate]  # the top-k of the model's distribution, most probable first
    forced: bool = False  # chosen by the caller (what-if), not by the decoding rule
    decoder_self: list[torch.Tensor] = field(default_factory=list)  # per layer (h, t+1): masked self-attention
    cross: list[torch.Tensor] = field(default_factory=list)  # per layer (h, S): attention over the source
    logits: torch.Tensor | None = None  # (vocab,) raw scores, so a view can re-shape the distribution


@dataclass
class AttentionTrace:
    """Every head's attention weights for a batch, one tensor per layer, each (B, h, T_q, T_k)."""

    encoder_self: list[torch.Tensor] = field(default_factory=list)  # T_q = T_k = source length
    decoder_self: list[torch.Tensor] = field(default_factory=list)  # masked: T_k = target length so far
    cross: list[torch.Tensor] = field(default_factory=list)  # T_k = source length


def piece_label(piece: str, width: int = 10) -> str:
    """A piece as a reader sees it: SentencePiece's word-start mark '▁' shown as '·', clipped to width."""
    text = piece.replace("\u2581", "·") or "∅"
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def top_candidates(logits: torch.Tensor, tokenizer: Tokenizer, k: int, temperature: float = 1.0) -> list[Candidate]:
    """The k most probable pieces under softmax(logits / temperature), most probable first.

    Traces store temperature 1; a view's temperature control re-shapes with this. `logprob`
    stays the model's own (temperature 1), so a re-shaped view never changes a score.
    """
    check_sampling(temperature)
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


# ------------------------------------------------------------------------------------ builders
def _cpu(x: torch.Tensor) -> torch.Tensor:
    return x.detach().float().cpu()


def attention_trace(enc: Encoded, dec: Decoded | None = None) -> AttentionTrace:
    """The weights of a forward pass run with need_weights=True, gathered per family."""
    trace = AttentionTrace([a.weights for a in enc.attention or []])
    if dec is not None:
        trace.decoder_self = [a.weights for a in dec.self_attention or []]
        trace.cross = [a.weights for a in dec.cross_attention or []]
    return trace


def source_trace(tokenizer: Tokenizer, text: str, ids: list[int], enc: Encoded) -> SourceTrace:
    """What the encoder saw: row 0 of an `encode(..., need_weights=True)` of `ids`."""
    return SourceTrace(text, list(ids), tokenizer.pieces(ids), [_cpu(a.weights[0]) for a in enc.attention])


def step_trace(
    tokenizer: Tokenizer,
    index: int,
    token: int,
    logits: torch.Tensor,
    decoder_self: list[torch.Tensor],
    cross: list[torch.Tensor],
    *,
    top_k: int,
    forced: bool = False,
) -> StepTrace:
    """The StepTrace of output position `index`: every StepTrace in tt is built here.

    logits (vocab,) for this step's query; decoder_self per layer (h, index+1), cross per layer (h, S).
    """
    logits = _cpu(logits)
    return StepTrace(
        index=index,
        token=token,
        piece=tokenizer.pieces([token])[0],
        logprob=float(logits.log_softmax(-1)[token]),
        candidates=top_candidates(logits, tokenizer, top_k),
        forced=forced,
        decoder_self=[_cpu(w) for w in decoder_self],
        cross=[_cpu(w) for w in cross],
        logits=logits,
    )


@torch.inference_mode()
def trace_steps(
    loaded: LoadedModel,
    src_ids: list[int],
    out_ids: list[int],
    *,
    top_k: int = 5,
    text: str = "",
    head_mask: HeadMask | None = None,
) -> tuple[SourceTrace, list[StepTrace]]:
    """What the model saw at each step of producing `out_ids` from `src_ids`, in one teacher-forced pass.

    src_ids: the encoder input as core.decode.source.prepare_source makes it (EOS last, fits the
    model). out_ids: the output pieces without BOS; end them with EOS to include the step that
    stopped. One pass over BOS + out_ids[:-1] gives exactly the attention each incremental
    decoding step saw, because the look-ahead mask hides every later position. With a
    `head_mask`, the steps are those of the model with those heads off.
    """
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    if not src_ids or src_ids[-1] != cfg.eos_id or len(src_ids) > cfg.max_len:
        raise TTError(
            f"source ids must end with EOS and fit the model's {cfg.max_len} positions "
            "(make them with core.decode.source.prepare_source)"
        )
    if len(out_ids) > cfg.max_len:
        raise TTError(f"output has {len(out_ids)} pieces; this model takes at most {cfg.max_len}")
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    enc = model.encode(src, need_weights=True, head_mask=head_mask)
    source = source_trace(tok, text, src_ids, enc)
    if not out_ids:
        return source, []
    tgt_in = torch.tensor([[cfg.bos_id] + list(out_ids[:-1])], device=device)  # (1, T)
    dec = model.decode(tgt_in, enc, need_weights=True, head_mask=head_mask)
    steps = [
        step_trace(
            tok,
            t,
            token,
            dec.logits[0, t],
            [a.weights[0, :, t, : t + 1] for a in dec.self_attention],  # per layer (h, t+1)
            [a.weights[0, :, t] for a in dec.cross_attention],  # per layer (h, S)
            top_k=top_k,
        )
        for t, token in enumerate(out_ids)
    ]
    return source, steps


# ------------------------------------------------------------------------------------ readers
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


def attention_labels(source: SourceTrace, steps: list[StepTrace], family: str) -> tuple[list[str], list[str]]:
    """The pieces along `attention_matrix`'s rows (queries) and columns (keys): cross, the steps' pieces
    by the source's; decoder_self, the steps' pieces by what the decoder was fed (BOS, y_0 … y_{T-2});
    encoder_self, the source's by the source's."""
    if family == "encoder_self":
        return list(source.pieces), list(source.pieces)
    rows = [s.piece for s in steps]
    if family == "cross":
        return rows, list(source.pieces)
    return rows, [BOS_PIECE, *rows[:-1]]


def attention_grid(source: SourceTrace, steps: list[StepTrace], family: str, query: int) -> torch.Tensor:
    """Every layer × head at a glance for one query: (n_layers · h, keys), layer-major."""
    if family == "encoder_self":
        rows = [w[:, query] for w in source.encoder_self]  # per layer (h, S)
    else:
        rows = getattr(steps[query], "cross" if family == "cross" else "decoder_self")  # per layer (h, keys)
    return torch.cat(rows)  # (n_layers · h, keys)
