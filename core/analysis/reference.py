"""Reference mode: hold the model against a reference translation.

Teacher forcing feeds the reference to the decoder and reads, at every step, how the model ranks
the reference's next piece and what it would have picked instead. Greedy search from the same
source gives the free-running output. Up to the first step where the model's own choice differs
from the reference, greedy search follows the reference exactly (same prefix, same argmax), so
that step is where the free-running output leaves the reference: the *first divergence*.

The batched teacher-forced scoring here (`pair_batches`, `reference_logprobs`) is shared with the
head-ablation analysis, which re-scores the same references with heads switched off.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from core.checkpoint import LoadedModel
from core.errors import DataError


@dataclass
class RefStep:
    index: int  # output position t (0 = the first piece after BOS)
    ref_token: int
    ref_piece: str
    ref_rank: int  # 1 = the model's most probable piece (PAD and BOS, never emitted, are not ranked)
    ref_prob: float
    model_token: int  # what the model would emit here, given the reference prefix
    model_piece: str
    model_prob: float

    @property
    def agrees(self) -> bool:
        return self.ref_token == self.model_token


@dataclass
class RefComparison:
    source: str
    reference: str
    output: str  # the free-running greedy translation
    output_pieces: list[str]
    steps: list[RefStep]  # one per reference piece, EOS last
    first_divergence: int | None  # the first step whose model choice is not the reference piece
    ref_logprob: float  # log p(reference | source), EOS included


@dataclass
class RefSummary:
    """Where and on what the model leaves the reference over a file."""

    sentences: int
    diverged: int  # sentences whose greedy output leaves the reference somewhere
    mean_ref_logprob: float  # per sentence
    mean_ref_rank: float  # over all steps
    top1_agreement: float  # share of steps where the model's choice is the reference piece
    by_position: dict[int, int] = field(default_factory=dict)  # first-divergence step -> sentences
    by_relative_position: dict[str, int] = field(default_factory=dict)  # fifth of the reference -> sentences
    ref_pieces: list[tuple[str, int]] = field(
        default_factory=list
    )  # reference pieces the model leaves, most often first
    swaps: list[tuple[str, str, int]] = field(default_factory=list)  # (reference piece, model's piece, sentences)


# ------------------------------------------------------------------------------------ batching
@dataclass
class PairBatch:
    """Teacher-forcing tensors for a batch of (source, reference) pairs, padded."""

    index: list[int]  # position of each row in the caller's list of pairs
    src: torch.Tensor  # (B, S) source ids, EOS last
    tgt_in: torch.Tensor  # (B, T) BOS + reference
    tgt_out: torch.Tensor  # (B, T) reference + EOS; PAD past the end


def encode_pairs(loaded: LoadedModel, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    """(source ids + EOS, reference ids + EOS) per pair, each cut to the model's max_len."""
    tok, cfg = loaded.tokenizer, loaded.cfg
    out = []
    for i, (src, ref) in enumerate(pairs):
        if not src.strip() or not ref.strip():
            raise DataError(f"pair {i + 1}: empty source or reference")
        s = tok.encode(src.strip())[: cfg.max_len - 1] + [cfg.eos_id]
        r = tok.encode(ref.strip())[: cfg.max_len - 1] + [cfg.eos_id]
        out.append((s, r))
    return out


def pair_batches(
    ids: Sequence[tuple[list[int], list[int]]],
    pad_id: int,
    bos_id: int,
    max_tokens: int = 8000,
    device: torch.device | str = "cpu",
) -> Iterator[PairBatch]:
    """Length-sorted batches of about `max_tokens` padded pieces (source + target) each."""
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i][0]), len(ids[i][1])))
    start = 0
    while start < len(order):
        end, s_max, t_max = start, 0, 0
        while end < len(order):
            s, r = ids[order[end]]
            s2, t2 = max(s_max, len(s)), max(t_max, len(r))
            if end > start and (end - start + 1) * (s2 + t2) > max_tokens:
                break
            s_max, t_max, end = s2, t2, end + 1
        rows = order[start:end]
        src = torch.full((len(rows), s_max), pad_id, dtype=torch.long)
        tgt_in = torch.full((len(rows), t_max), pad_id, dtype=torch.long)
        tgt_out = torch.full((len(rows), t_max), pad_id, dtype=torch.long)
        for b, i in enumerate(rows):
            s, r = ids[i]
            src[b, : len(s)] = torch.tensor(s)
            tgt_in[b, : len(r)] = torch.tensor([bos_id] + r[:-1])
            tgt_out[b, : len(r)] = torch.tensor(r)
        yield PairBatch(rows, src.to(device), tgt_in.to(device), tgt_out.to(device))
        start = end


def banned_ids(loaded: LoadedModel) -> list[int]:
    """Pieces decoding never emits (core.decode.search bans them too): PAD and BOS."""
    return [loaded.cfg.pad_id, loaded.cfg.bos_id]


# ------------------------------------------------------------------------------------ comparison
@torch.inference_mode()
def compare_pairs(
    loaded: LoadedModel, pairs: Sequence[tuple[str, str]], *, max_tokens: int = 8000
) -> list[RefComparison]:
    """A RefComparison per (source, reference) pair, in the order given."""
    from core.decode.search import greedy, pad_batch

    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    device = next(model.parameters()).device
    ids = encode_pairs(loaded, pairs)
    banned = torch.tensor(banned_ids(loaded), device=device)
    results: list[RefComparison | None] = [None] * len(pairs)
    for batch in pair_batches(ids, cfg.pad_id, cfg.bos_id, max_tokens, device):
        logits = model(batch.src, batch.tgt_in).float()  # (B, T, vocab)
        logprobs = logits.log_softmax(-1).index_fill(-1, banned, float("-inf"))  # (B, T, vocab)
        ref_lp = logprobs.gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, T)
        ranks = (logprobs > ref_lp.unsqueeze(-1)).sum(-1) + 1  # (B, T)
        model_lp, model_tok = logprobs.max(-1)  # (B, T)
        hyps = greedy(model, pad_batch([ids[i][0] for i in batch.index], cfg.pad_id, device))
        for b, i in enumerate(batch.index):
            ref_ids = ids[i][1]
            n = len(ref_ids)
            ref_pieces, model_ids = tok.pieces(ref_ids), model_tok[b, :n].tolist()
            model_pieces = tok.pieces(model_ids)
            steps = [
                RefStep(
                    t,
                    ref_ids[t],
                    ref_pieces[t],
                    int(ranks[b, t]),
                    float(ref_lp[b, t].exp()),
                    model_ids[t],
                    model_pieces[t],
                    float(model_lp[b, t].exp()),
                )
                for t in range(n)
            ]
            first = next((s.index for s in steps if not s.agrees), None)
            results[i] = RefComparison(
                source=pairs[i][0],
                reference=pairs[i][1],
                output=tok.decode(hyps[b].tokens),
                output_pieces=tok.pieces(hyps[b].tokens),
                steps=steps,
                first_divergence=first,
                ref_logprob=float(ref_lp[b, :n].sum()),
            )
    return results  # type: ignore[return-value]


def summarize(comparisons: Sequence[RefComparison], top: int = 10) -> RefSummary:
    """Count where (absolute step, fifth of the reference) and on what pieces the model leaves the reference."""
    n = len(comparisons)
    steps = [s for c in comparisons for s in c.steps]
    by_pos: Counter[int] = Counter()
    by_rel: Counter[str] = Counter()
    pieces: Counter[str] = Counter()
    swaps: Counter[tuple[str, str]] = Counter()
    for c in comparisons:
        if c.first_divergence is None:
            continue
        t = c.first_divergence
        step = c.steps[t]
        by_pos[t] += 1
        fifth = min(4, t * 5 // len(c.steps))
        by_rel[f"{fifth * 20}-{fifth * 20 + 20}%"] += 1
        pieces[step.ref_piece] += 1
        swaps[(step.ref_piece, step.model_piece)] += 1
    return RefSummary(
        sentences=n,
        diverged=sum(by_pos.values()),
        mean_ref_logprob=sum(c.ref_logprob for c in comparisons) / max(n, 1),
        mean_ref_rank=sum(s.ref_rank for s in steps) / max(len(steps), 1),
        top1_agreement=sum(s.agrees for s in steps) / max(len(steps), 1),
        by_position=dict(sorted(by_pos.items())),
        by_relative_position=dict(sorted(by_rel.items(), key=lambda kv: int(kv[0].split("-")[0]))),
        ref_pieces=pieces.most_common(top),
        swaps=[(r, m, k) for (r, m), k in swaps.most_common(top)],
    )
