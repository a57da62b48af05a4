"""Beam search over the key/value cache: the paper's decoding (§6.1), for a batch of sentences at once.

Beam size 4, length penalty α = 0.6, maximum output length = input length + 50, terminating early when
possible (`_still_searching`). Lengths count pieces: the input's without its EOS, the output's with the EOS
that ends it (every scored piece). A finished hypothesis is a `Hypothesis` whose score is log p(Y|X) / lp(Y),
filed under its sentence as it ends; the n best of each sentence come back, best first.

Every sentence's beams are rows of one batch through the cache (core.decode.search's `next_logprobs`, the
step greedy search takes too). On the fused step (core/model/step.py) a sentence's beams share one row of
every cache (`BeamSlots`): a step's keys and values are written once and never move; choosing the next
beams moves a small ancestry mask instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from core.decode.method import EXTRA_LEN
from core.decode.parts import in_parts
from core.decode.search import (
    Hypothesis,
    banned_pieces,
    check_stop,
    drop_rows,
    next_logprobs,
    output_limits,
    splittable,
)
from core.model import native
from core.model.step import fused_step
from core.model.transformer import DecoderState, Encoded, Transformer


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^α (Wu et al. 2016, Eq. 14); 1 for a one-piece output."""
    return ((5.0 + length) / 6.0) ** alpha


# Candidate fates, as beam_steps reports them.
KEPT, PRUNED, FINISHED = 0, 1, 2


@dataclass
class StepCandidates:
    """Sentence 0's top 2·beam candidates at one step (what `beam_steps` turns into a BeamStep)."""

    parents: list[list[int]]  # the output so far of the beam each candidate extends
    parent_index: list[int]  # that beam's row among the previous step's live beams
    tokens: list[int]  # the piece it adds
    logprobs: list[float]  # log p of that piece
    scores: list[float]  # raw cumulative log-probability, best first
    fates: list[int]  # KEPT, PRUNED or FINISHED


@torch.inference_mode()
def beam_search(
    model: Transformer,
    src: torch.Tensor,
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    extra_len: int = EXTRA_LEN,
    max_output: int | None = None,
    n_best: int | None = 1,
    min_len: int = 0,
    on_step: Callable[[int, StepCandidates], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[list[Hypothesis]]:
    """Beam search for a batch of sources (B, S): the n_best hypotheses of each, best first.

    Every sentence keeps `beam_size` live beams as rows of one (B·beam) batch through the cache.
    At each step the 2·beam best extensions are taken per sentence (at most one EOS per beam, so
    at least `beam` of them go on): an EOS among the top `beam` finishes a hypothesis, the best
    `beam` others are the next beams. A sentence is done once `beam_size` hypotheses have finished
    and, at some step, its best candidate was one of them (the search goes on until its top beam
    has ended), or at its length limit (live beams then finish as they are). Finished hypotheses
    are ranked by log p(Y|X) / lp(Y), lp the GNMT length penalty with |Y| the number of scored pieces.
    n_best=None returns every finished hypothesis. `on_step` (beam_steps uses it) sees sentence
    0's candidates at every step. `stop`, asked before every step: True raises core.errors.Stopped. A batch is
    searched in parts at once where other processes crowd the cores (core.decode.parts).
    """
    if beam_size < 1 or (n_best is not None and not 1 <= n_best <= beam_size):
        raise ValueError(f"need beam_size >= 1 and 1 <= n_best <= beam_size, got {beam_size} and {n_best}")
    if on_step is None and splittable(model):  # on_step reads sentence 0's candidates: one search
        return in_parts(
            lambda rows: _beam_search(model, rows, beam_size, alpha, extra_len, max_output, n_best, min_len, stop),
            src,
            model.cfg.pad_id,
        )
    return _beam_search(model, src, beam_size, alpha, extra_len, max_output, n_best, min_len, stop, on_step)


def _beam_search(
    model: Transformer,
    src: torch.Tensor,
    beam_size: int,
    alpha: float,
    extra_len: int,
    max_output: int | None,
    n_best: int | None,
    min_len: int,
    stop: Callable[[], bool] | None,
    on_step: Callable[[int, StepCandidates], None] | None = None,
) -> list[list[Hypothesis]]:
    """`beam_search` of one batch (every row in one search)."""
    cfg = model.cfg
    b, device = src.size(0), src.device
    limits = output_limits(model, src, max_output, extra_len).tolist()
    banned = banned_pieces(model, device)
    fused = fused_step(model)
    if fused is not None:
        enc = fused.encode(src)
        state = fused.start_state(enc, capacity=max(limits), beam=beam_size)
    else:
        enc = model.encode(src)
        state = model.start_state(enc, capacity=max(limits))
    finished = _Finished(alpha, [[] for _ in range(b)])
    beams = _Beams(
        alive=list(range(b)),
        k=1,  # one beam (BOS) per sentence before the first step, `beam_size` afterwards
        scores=torch.zeros(b, 1, device=device),
        seqs=torch.empty(b, 0, dtype=torch.long, device=device),
        seq_lps=torch.empty(b, 0, device=device),
        top_finished=[False] * b,
    )
    step_input = torch.full((b, 1), cfg.bos_id, dtype=torch.long, device=device)
    # The fused step reads a sentence's memory and caches once for all its beams (`BeamSlots`); the modules
    # need a copy per beam.
    shared = fused is not None
    try:
        for step in range(max(limits)):
            check_stop(stop)
            lp = next_logprobs(
                model, step_input, enc, state, banned=banned, ban_eos=step < min_len, fused=fused, group=beams.k
            )
            c = _extend(beams, lp, beam_size, cfg.eos_id)
            del lp  # freed before the next step's logits are made, which then reuse its memory
            if on_step is not None and beams.alive[0] == 0:
                on_step(step, _sentence_zero(c, beams.seqs, beam_size))
            _finish(c, beams, finished)
            enc = _reorder(c, beams, enc, state, shared)
            keep = _still_searching(beams, step, limits, finished, beam_size)
            if not keep:
                break
            if len(keep) < len(beams.alive):
                enc = _drop_sentences(beams, keep, enc, state, shared)
                c.next_token = c.next_token.index_select(0, torch.tensor(keep, device=device))
            step_input = c.next_token.reshape(-1, 1)  # (n·k, 1)
    finally:
        if fused is not None:
            fused.release(state)  # its caches' memory serves the next search
    return finished.best_first(n_best)


@dataclass
class _Beams:
    """The live beams of the sentences still searching: n sentences × k beams, rows sentence-major."""

    alive: list[int]  # the original sentence of each live sentence
    k: int  # live beams per sentence
    scores: torch.Tensor  # (n, k) raw log-probabilities of the live beams
    seqs: torch.Tensor  # (n·k, t) output so far
    seq_lps: torch.Tensor  # (n·k, t) log p of each of those pieces
    top_finished: list[bool]  # per live sentence: at some step its best candidate was an EOS


@dataclass
class _Finished:
    """Every sentence's finished hypotheses, filed as they end, each scored log p(Y|X) / lp(Y)."""

    alpha: float  # the length penalty's exponent
    by_sentence: list[list[Hypothesis]]  # per original sentence, in the order they finished

    def add(self, sentence: int, raw: float, tokens: list[int], logprobs: list[float]) -> None:
        """`raw`: the cumulative log-probability the search ranked the beam by; |Y| counts every scored piece."""
        self.by_sentence[sentence].append(Hypothesis(tokens, logprobs, raw / length_penalty(len(logprobs), self.alpha)))

    def best_first(self, n_best: int | None) -> list[list[Hypothesis]]:
        """Each sentence's `n_best` (None: all) by score; among equal scores the one found first comes first."""
        return [sorted(hyps, key=lambda h: -h.score)[:n_best] for hyps in self.by_sentence]


@dataclass
class _Extensions:
    """One step's 2·beam best extensions per sentence, and which of them go on."""

    top_scores: torch.Tensor  # (n, width) raw cumulative log-probabilities, best first
    parent: torch.Tensor  # (n, width) the beam each extends
    token: torch.Tensor  # (n, width) the piece it adds
    cand_lps: torch.Tensor  # (n, width) log p of that piece
    is_eos: torch.Tensor  # (n, width)
    finite: torch.Tensor  # (n, width) not banned
    finishing: torch.Tensor  # (n, width) an EOS among the top `beam`: a finished hypothesis
    order: torch.Tensor  # (n, k_next) the candidates that become the next beams
    next_scores: torch.Tensor  # (n, k_next), -inf for a beam that is dead
    next_parent: torch.Tensor  # (n, k_next)
    next_token: torch.Tensor  # (n, k_next)


def _extend(beams: _Beams, lp: torch.Tensor, beam: int, eos_id: int) -> _Extensions:
    """The 2·beam best extensions of each sentence's beams (at most one EOS per beam, so at least
    `beam` of them go on): the top `beam` EOS ones finish, the best `beam` others are the next beams.

    A sentence's best candidates are among its beams' own best pieces, so each beam's top `width`
    pieces are found first (`_row_top`) and only those are scored: the same candidates as a top-k
    over all k·vocab sums, without forming them."""
    n, k, (_, vocab), device = len(beams.alive), beams.k, lp.shape, lp.device
    width = min(2 * beam, k * vocab)
    w = min(width, vocab)
    row_lps, row_tokens = _row_top(lp, w)  # (n·k, w)
    cand = (beams.scores.view(n * k, 1) + row_lps).view(n, k * w)  # (n, k·w)
    top_scores, top_index = cand.topk(width, dim=-1)  # (n, width), best first
    parent, token = top_index // w, row_tokens.view(n, k * w).gather(1, top_index)  # (n, width)
    is_eos = token == eos_id
    rank = torch.arange(width, device=device).expand(n, width)
    finite = top_scores > float("-inf")
    # The next beams: the best non-EOS candidates (EOS ones sort last and, if taken, are dead).
    k_next = min(beam, width)
    order = (rank + is_eos.long() * width).topk(k_next, dim=-1, largest=False).indices  # (n, k_next)
    next_scores = top_scores.gather(1, order).masked_fill(is_eos.gather(1, order), float("-inf"))
    return _Extensions(
        top_scores=top_scores,
        parent=parent,
        token=token,
        cand_lps=row_lps.view(n, k * w).gather(1, top_index),
        is_eos=is_eos,
        finite=finite,
        finishing=is_eos & (rank < beam) & finite,
        order=order,
        next_scores=next_scores,
        next_parent=parent.gather(1, order),
        next_token=token.gather(1, order),
    )


CHUNK = 32  # vocabulary pieces per block in _row_top's first pass


def _row_top(lp: torch.Tensor, w: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The w largest values of each row of lp (R, V), best first, and their columns.

    A row's w largest lie in the w blocks of CHUNK columns with the largest maxima, so a vectorised max
    per block and a top-k over the w·CHUNK values of those blocks stand in for a top-k over the whole row:
    on the CPU a top-k costs per element what a max does many times over (bench/README.md)."""
    r, v = lp.shape
    found = native.row_top(lp, w)  # in C where core/model/native is built: one pass over each row
    if found is not None:
        return found
    if v % CHUNK or v < 64 * w:  # small or ragged vocabularies: one top-k
        return lp.topk(w, dim=-1)
    blocks = lp.view(r, v // CHUNK, CHUNK)
    best = blocks.amax(-1).topk(w, dim=-1).indices  # (R, w) the blocks holding the w largest
    picked = blocks.gather(1, best[:, :, None].expand(r, w, CHUNK)).view(r, w * CHUNK)
    values, where = picked.topk(w, dim=-1)  # (R, w)
    return values, best.gather(1, where // CHUNK) * CHUNK + where % CHUNK


def _sentence_zero(c: _Extensions, seqs: torch.Tensor, beam: int) -> StepCandidates:
    """What became of sentence 0's candidates at this step (beam_steps shows it)."""
    width = c.token.size(1)
    kept = torch.zeros(width, dtype=torch.bool)
    kept[c.order[0].cpu()] = True
    kept &= (~c.is_eos[0] & c.finite[0]).cpu()
    fates = torch.full((width,), PRUNED)
    fates[kept] = KEPT
    fates[c.finishing[0].cpu()] = FINISHED
    return StepCandidates(
        parents=[seqs[int(p)].tolist() for p in c.parent[0]],
        parent_index=c.parent[0].tolist(),
        tokens=c.token[0].tolist(),
        logprobs=c.cand_lps[0].tolist(),
        scores=c.top_scores[0].tolist(),
        fates=fates.tolist(),
    )


def _finish(c: _Extensions, beams: _Beams, finished: _Finished) -> None:
    """File this step's finished hypotheses under their sentences: a few per step, so a Python loop is cheap."""
    for s, top in enumerate(c.finishing[:, 0].tolist()):
        beams.top_finished[s] = beams.top_finished[s] or top
    where = c.finishing.nonzero()  # (m, 2): sentence, candidate
    if where.numel() == 0:
        return
    s = where[:, 0]
    flat = s * c.token.size(1) + where[:, 1]  # their places in the (n, width) tables
    rows = s * beams.k + c.parent.view(-1).index_select(0, flat)  # the beams they end
    # One conversion per table, not per hypothesis: a sentence finishes several a step.
    pieces, logprobs = beams.seqs.index_select(0, rows).tolist(), beams.seq_lps.index_select(0, rows).tolist()
    scores, last_lps = c.top_scores.view(-1).index_select(0, flat), c.cand_lps.view(-1).index_select(0, flat)
    for sent, score, toks, lps, last in zip(s.tolist(), scores.tolist(), pieces, logprobs, last_lps.tolist()):
        finished.add(beams.alive[sent], score, toks, lps + [last])  # the EOS is scored, not kept


def _reorder(c: _Extensions, beams: _Beams, enc: Encoded, state: DecoderState, shared: bool) -> Encoded:
    """Make the chosen extensions the live beams: their rows of the old (n·k) batch, extended.
    `shared`: the memory and every cache hold one row per sentence, not per beam; only the beams'
    ancestry moves."""
    n, device = len(beams.alive), c.order.device
    k_next = c.order.size(1)
    rows = (torch.arange(n, device=device)[:, None] * beams.k + c.next_parent).view(-1)  # (n·k_next,)
    if shared:
        state.beams.follow(rows)
    elif k_next != beams.k:
        enc = drop_rows(enc, state, rows)  # every sentence's memory and caches, once per beam
    else:
        for cache in state.self_attn:  # the memory stays: one copy per beam of every sentence
            cache.select(rows)
    beams.seqs = torch.cat([beams.seqs.index_select(0, rows), c.next_token.view(-1, 1)], dim=1)  # (n·k_next, t+1)
    picked_lps = c.cand_lps.gather(1, c.order).view(-1, 1)
    beams.seq_lps = torch.cat([beams.seq_lps.index_select(0, rows), picked_lps], dim=1)
    beams.scores, beams.k = c.next_scores, k_next
    return enc


def _still_searching(beams: _Beams, step: int, limits: list[int], finished: _Finished, beam: int) -> list[int]:
    """The live sentences that go on. A sentence stops once `beam` hypotheses have finished and its
    best candidate at some step was an EOS (CTranslate2's rule). Stopping at the `beam`-th finished
    hypothesis alone (fairseq's early stop) can cut off a live beam that was ahead of every finished
    one: "I don't have a car." (−0.49) lost to "I have no car." (−1.46) that way. Searching on
    only adds hypotheses, so the best normalised score can only rise. At its length limit a
    sentence's live beams finish as they are, even when this same step also completed the
    stop rule: one may outrank those."""
    keep = []
    no_live_beam = (beams.scores[:, 0] == float("-inf")).tolist()  # (n,): beams sort best first
    for s, sent in enumerate(beams.alive):
        if no_live_beam[s]:
            continue
        if step + 1 >= limits[sent]:
            for j in range(beams.k):
                if float(beams.scores[s, j]) > float("-inf"):
                    row = s * beams.k + j
                    finished.add(sent, float(beams.scores[s, j]), beams.seqs[row].tolist(), beams.seq_lps[row].tolist())
            continue
        if len(finished.by_sentence[sent]) >= beam and beams.top_finished[s]:
            continue
        keep.append(s)
    return keep


def _drop_sentences(beams: _Beams, keep: list[int], enc: Encoded, state: DecoderState, shared: bool) -> Encoded:
    """Only sentences `keep` stay in the batch (their memory, caches and beams). `shared`: the memory
    and every cache hold one row per sentence."""
    device, k = beams.scores.device, beams.k
    sent_index = torch.tensor(keep, device=device)
    row_index = (sent_index[:, None] * k + torch.arange(k, device=device)).view(-1)  # (n'·k,)
    if shared:
        state.select(sent_index, row_index)
        enc = enc.select(sent_index)
    else:
        enc = drop_rows(enc, state, row_index)
    beams.scores = beams.scores.index_select(0, sent_index)
    beams.seqs, beams.seq_lps = beams.seqs.index_select(0, row_index), beams.seq_lps.index_select(0, row_index)
    beams.alive = [beams.alive[s] for s in keep]
    beams.top_finished = [beams.top_finished[s] for s in keep]
    return enc
