"""Decoding over the key/value cache: batched greedy search, beam search and sampling.

All three read the model one step at a time (`Transformer.decode` with a `DecoderState`), so a step
costs one new position per row, not the whole prefix again. Rows that are done leave the batch
(and the cache), so the work shrinks as sentences finish.

Every rule here bans PAD and BOS from the output (they are never a translation's next piece) and
can ban EOS for the first `min_len` steps. The bans are applied after the softmax, so the
`token_logprobs` of a hypothesis are the model's own log-probabilities.

Beam search follows the paper's setup (§6.1): beam size 4, length penalty α = 0.6, maximum output
length = input length + 50, terminating early when possible (`_still_searching`). Lengths count pieces: the
input's without its EOS, the output's with the EOS that ends it (every scored piece).

The self-attention caches are preallocated for the step limit (`start_state(capacity=...)`), so a
step writes one position in place instead of copying the cache. On the fused step (core/model/step.py)
beam search keeps a sentence's beams in one row of every cache (`BeamSlots`): a step's keys and values
are written once and never move; choosing the next beams moves a small ancestry mask instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from core.errors import ConfigError, Stopped
from core.model.attention import HeadMask
from core.model.step import FusedStep, fused_step
from core.model.transformer import DecoderState, Encoded, Transformer

EXTRA_LEN = 50  # output may run this many pieces past the source length (§6.1)


@dataclass
class Hypothesis:
    tokens: list[int]  # output piece ids, without BOS/EOS
    token_logprobs: list[float]  # log p of each chosen token (EOS's last, when it was produced)
    score: float  # what the hypothesis was ranked by: beam search's length-normalised score,
    # the plain sum of token log-probabilities for greedy search and sampling

    @property
    def logprob(self) -> float:
        """log p(output | source): the raw, un-normalised score."""
        return sum(self.token_logprobs)


def pad_batch(seqs: list[list[int]], pad_id: int, device: torch.device | str = "cpu") -> torch.Tensor:
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out.to(device)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^α (Wu et al. 2016, Eq. 14); 1 for a one-piece output."""
    return ((5.0 + length) / 6.0) ** alpha


def output_limits(model: Transformer, src: torch.Tensor, max_output: int | None, extra_len: int) -> torch.Tensor:
    """Most output pieces per sentence (B,), EOS included: source pieces + extra_len, or max_output.

    Source pieces are the non-PAD tokens other than EOS (the source's own end marker is not part of
    the input's length). The decoder reads BOS plus all but the last output piece, so the
    positional table (max_len of the config) must cover limit positions; one is kept spare as
    greedy always did. The Stepper (`tt inspect`) calls this too, so it stops where greedy does.
    """
    cap = model.cfg.max_len - 1
    if max_output is not None:
        return torch.full((src.size(0),), max(1, min(max_output, cap)), dtype=torch.long)
    src_lens = ((src != model.cfg.pad_id) & (src != model.cfg.eos_id)).sum(1).cpu()  # (B,)
    return (src_lens + extra_len).clamp(min=1, max=cap)


def _banned(model: Transformer, device: torch.device) -> torch.Tensor:
    return torch.tensor([model.cfg.pad_id, model.cfg.bos_id], device=device)


def next_logprobs(
    model: Transformer,
    step_input: torch.Tensor,
    enc: Encoded,
    state: DecoderState,
    *,
    banned: torch.Tensor,
    ban_eos: bool,
    head_mask: HeadMask | None = None,
    fused: FusedStep | None = None,
    group: int = 1,
) -> torch.Tensor:
    """One decoder step over the cache: step_input (N, 1) -> log p(next piece) (N, vocab), bans applied.

    `fused` (core/model/step.py) computes the same step with fewer operations; None runs the modules.
    With `fused`, `group` rows in a row share one row of the memory (beam search's beams of a sentence).

    Greedy search needs only the argmax and its log-probability, but on the CPU the fused
    log_softmax is 2-3x cheaper than the logsumexp that would skip it (bench/README.md), so every
    rule takes the full log-softmax.
    """
    if fused is not None:
        # The step's logits are its own new tensor, read by no hook: normalised in place, so a step allocates
        # one (N, vocab) tensor, not two (at beam batch 64, 8 MB of fresh pages fewer).
        logits = fused(step_input, enc, state, group)  # (N, vocab)
        logprobs = torch.log_softmax(logits, -1, out=logits)
    else:
        logits = model.decode(step_input, enc, state=state, head_mask=head_mask).logits[:, -1]  # (N, vocab)
        logprobs = logits.float().log_softmax(-1)
    logprobs.index_fill_(1, banned, float("-inf"))
    if ban_eos:
        logprobs[:, model.cfg.eos_id] = float("-inf")
    return logprobs


def _drop_rows(enc: Encoded, state: DecoderState, index: torch.Tensor) -> Encoded:
    """Keep batch rows `index` of the memory and every cache (self and cross)."""
    state.select(index)
    return enc.select(index)


def _hypotheses(tokens: torch.Tensor, logprobs: torch.Tensor, lengths: torch.Tensor, eos_id: int) -> list[Hypothesis]:
    """Rows of a (B, L) token table cut at their lengths; a final EOS is scored but not kept."""
    out = []
    for toks, lps, n in zip(tokens.tolist(), logprobs.tolist(), lengths.tolist()):
        toks, lps = toks[:n], lps[:n]
        if toks and toks[-1] == eos_id:
            toks = toks[:-1]
        out.append(Hypothesis(toks, lps, sum(lps)))
    return out


def _pick_loop(
    model: Transformer,
    src: torch.Tensor,
    pick: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    *,
    max_output: int | None,
    extra_len: int,
    min_len: int,
    head_mask: HeadMask | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[Hypothesis]:
    """The loop greedy search and sampling share: one piece per row per step, chosen by `pick`
    (log-probabilities (n, vocab) -> the chosen pieces (n,) and their log-probabilities (n,)).

    `head_mask` (unbatched: it applies to every row) switches heads off for an ablation. `stop`, asked
    before every step: True raises core.errors.Stopped (nobody wants the rest)."""
    cfg = model.cfg
    b, device = src.size(0), src.device
    limits = output_limits(model, src, max_output, extra_len).to(device)  # (B,)
    steps = int(limits.max())
    banned = _banned(model, device)
    fused = fused_step(model) if head_mask is None else None
    if fused is not None:
        enc = fused.encode(src)
        state = fused.start_state(enc, capacity=steps)
    else:
        enc = model.encode(src, head_mask=head_mask)
        state = model.start_state(enc, capacity=steps)
    tokens = torch.full((b, steps), cfg.pad_id, dtype=torch.long, device=device)  # (B, L)
    logprobs = torch.zeros(b, steps, device=device)  # (B, L)
    lengths = limits.clone()  # pieces scored per row, EOS included
    alive = torch.arange(b, device=device)  # the original row of each live batch row
    alive_limits = limits  # the step limit of each live batch row
    step_input = torch.full((b, 1), cfg.bos_id, dtype=torch.long, device=device)
    for step in range(steps):
        _check(stop)
        lp = next_logprobs(
            model, step_input, enc, state, banned=banned, ban_eos=step < min_len, head_mask=head_mask, fused=fused
        )
        chosen, chosen_lp = pick(lp)  # (n,), (n,)
        del lp  # freed before the next step's logits are made, which then reuse its memory
        tokens[alive, step] = chosen
        logprobs[alive, step] = chosen_lp
        done = (chosen == cfg.eos_id).logical_or_(alive_limits <= step + 1)  # (n,)
        if bool(done.any()):
            lengths[alive[done]] = step + 1
            keep = (~done).nonzero().squeeze(1)
            if keep.numel() == 0:
                break
            alive, alive_limits, chosen = alive[keep], alive_limits[keep], chosen[keep]
            enc = _drop_rows(enc, state, keep)
        step_input = chosen[:, None]  # (n, 1)
    return _hypotheses(tokens, logprobs, lengths, cfg.eos_id)


def _check(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise Stopped("the decode was stopped by its caller")


def _most_probable(lp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy's choice: the first most probable piece of each row, and its log-probability."""
    best_lp, best = lp.max(-1)
    return best, best_lp


@torch.inference_mode()
def greedy(
    model: Transformer,
    src: torch.Tensor,
    *,
    max_output: int | None = None,
    extra_len: int = EXTRA_LEN,
    min_len: int = 0,
    head_mask: HeadMask | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[Hypothesis]:
    """Pick the most probable piece at every step, for a batch of sources (B, S) at once.

    Finished rows are dropped from the batch (and the cache) as they emit EOS, so the work
    shrinks with the batch. max_output defaults to source length + `extra_len` (within the model's).
    `min_len` bans EOS for that many steps (benchmarks use it to decode a fixed length).
    """
    return _pick_loop(
        model,
        src,
        _most_probable,
        max_output=max_output,
        extra_len=extra_len,
        min_len=min_len,
        head_mask=head_mask,
        stop=stop,
    )


def check_sampling(temperature: float, top_k: int = 0, top_p: float = 1.0) -> None:
    """The one check of the sampling knobs (translate's options, `sample`, a view's re-shaping)."""
    problems = []
    if not temperature > 0:
        problems.append(f"temperature must be positive, got {temperature}")
    if top_k < 0:
        problems.append(f"top-k must be 0 (off) or positive, got {top_k}")
    if not 0.0 <= top_p <= 1.0:
        problems.append(f"top-p must be in [0, 1], got {top_p}")
    if problems:
        raise ConfigError("; ".join(problems))


def filter_logits(logits: torch.Tensor, *, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Keep the top_k most probable pieces and/or the smallest set whose probability reaches top_p.

    logits (N, vocab) -> logits with the rest at -inf. top_k=0 and top_p=1 keep everything.
    The most probable piece always survives, so top_p=0 means greedy.
    """
    if top_k > 0 and top_k < logits.size(-1):
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (N, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # (N, vocab)
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        # Drop a piece when the pieces before it already reach top_p (so the first always stays).
        drop_sorted = (cumulative - sorted_logits.softmax(-1)) >= top_p
        drop_sorted[:, 0] = False
        drop = drop_sorted.scatter(1, order, drop_sorted)  # back to vocabulary order
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


@torch.inference_mode()
def sample(
    model: Transformer,
    src: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    extra_len: int = EXTRA_LEN,
    max_output: int | None = None,
    min_len: int = 0,
    stop: Callable[[], bool] | None = None,
) -> list[Hypothesis]:
    """Draw each piece from softmax(logits / temperature), optionally cut to top_k / top_p.

    The same seed gives the same outputs (a private torch.Generator; the global RNG is untouched).
    token_logprobs are under the model itself (temperature 1, no cut), like greedy's.
    """
    check_sampling(temperature, top_k, top_p)
    generator = torch.Generator(device=src.device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)

    def pick(lp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # The log-probabilities are logits shifted per row: dividing them by T is softmax(logits / T).
        shaped = filter_logits(lp / temperature, top_k=top_k, top_p=top_p)
        chosen = torch.multinomial(shaped.softmax(-1), 1, generator=generator)  # (n, 1)
        return chosen.squeeze(1), lp.gather(1, chosen).squeeze(1)

    return _pick_loop(model, src, pick, max_output=max_output, extra_len=extra_len, min_len=min_len, stop=stop)


# --------------------------------------------------------------------------------- beam search
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
    0's candidates at every step. `stop`, asked before every step: True raises core.errors.Stopped.
    """
    if beam_size < 1 or (n_best is not None and not 1 <= n_best <= beam_size):
        raise ValueError(f"need beam_size >= 1 and 1 <= n_best <= beam_size, got {beam_size} and {n_best}")
    cfg = model.cfg
    b, device = src.size(0), src.device
    limits = output_limits(model, src, max_output, extra_len).tolist()
    banned = _banned(model, device)
    fused = fused_step(model)
    if fused is not None:
        enc = fused.encode(src)
        state = fused.start_state(enc, capacity=max(limits), beam=beam_size)
    else:
        enc = model.encode(src)
        state = model.start_state(enc, capacity=max(limits))
    finished: list[list[tuple[float, list[int], list[float]]]] = [[] for _ in range(b)]
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
            _check(stop)
            lp = next_logprobs(
                model, step_input, enc, state, banned=banned, ban_eos=step < min_len, fused=fused, group=beams.k
            )
            c = _extend(beams, lp, beam_size, cfg.eos_id)
            del lp  # freed before the next step's logits are made, which then reuse its memory
            if on_step is not None and beams.alive[0] == 0:
                on_step(step, _sentence_zero(c, beams.seqs, beam_size))
            _finish(c, beams, finished, cfg.eos_id)
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
    return [rank_finished(f, alpha, cfg.eos_id)[:n_best] for f in finished]


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


def _finish(c: _Extensions, beams: _Beams, finished: list, eos_id: int) -> None:
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
        finished[beams.alive[sent]].append((score, toks + [eos_id], lps + [last]))


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
        enc = _drop_rows(enc, state, rows)  # every sentence's memory and caches, once per beam
    else:
        for cache in state.self_attn:  # the memory stays: one copy per beam of every sentence
            cache.select(rows)
    beams.seqs = torch.cat([beams.seqs.index_select(0, rows), c.next_token.view(-1, 1)], dim=1)  # (n·k_next, t+1)
    picked_lps = c.cand_lps.gather(1, c.order).view(-1, 1)
    beams.seq_lps = torch.cat([beams.seq_lps.index_select(0, rows), picked_lps], dim=1)
    beams.scores, beams.k = c.next_scores, k_next
    return enc


def _still_searching(beams: _Beams, step: int, limits: list[int], finished: list, beam: int) -> list[int]:
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
                    finished[sent].append(
                        (float(beams.scores[s, j]), beams.seqs[row].tolist(), beams.seq_lps[row].tolist())
                    )
            continue
        if len(finished[sent]) >= beam and beams.top_finished[s]:
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
        enc = _drop_rows(enc, state, row_index)
    beams.scores = beams.scores.index_select(0, sent_index)
    beams.seqs, beams.seq_lps = beams.seqs.index_select(0, row_index), beams.seq_lps.index_select(0, row_index)
    beams.alive = [beams.alive[s] for s in keep]
    beams.top_finished = [beams.top_finished[s] for s in keep]
    return enc


def rank_finished(finished: list[tuple[float, list[int], list[float]]], alpha: float, eos_id: int) -> list[Hypothesis]:
    """Finished (raw score, pieces, log-probs) -> Hypotheses sorted by length-normalised score."""
    hyps = []
    for raw, toks, lps in finished:
        normalised = raw / length_penalty(len(lps), alpha)
        hyps.append(Hypothesis(toks[:-1] if toks and toks[-1] == eos_id else toks, lps, normalised))
    # Stable sort: among equal scores the earlier-finished (found first) comes first.
    return sorted(hyps, key=lambda h: -h.score)
