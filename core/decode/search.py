"""Decoding over the key/value cache: batched greedy search and sampling, and the step every rule takes.

Both read the model one step at a time (`Transformer.decode` with a `DecoderState`), so a step
costs one new position per row, not the whole prefix again. Rows that are done leave the batch
(and the cache), so the work shrinks as sentences finish. Beam search (core.decode.beam) takes the
same step (`next_logprobs`) and the same limits (`output_limits`).

Every rule bans PAD and BOS from the output (they are never a translation's next piece) and
can ban EOS for the first `min_len` steps. The bans are applied after the softmax, so the
`token_logprobs` of a hypothesis are the model's own log-probabilities.

The self-attention caches are preallocated for the step limit (`start_state(capacity=...)`), so a
step writes one position in place instead of copying the cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from core.decode.method import EXTRA_LEN
from core.decode.parts import in_parts
from core.errors import ConfigError, Stopped
from core.model import native
from core.model.attention import HeadMask
from core.model.step import FusedStep, fused_step
from core.model.transformer import DecoderState, Encoded, Transformer


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


def banned_pieces(model: Transformer, device: torch.device) -> torch.Tensor:
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


def drop_rows(enc: Encoded, state: DecoderState, index: torch.Tensor) -> Encoded:
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
    b, device = src.size(0), src.device
    limits = output_limits(model, src, max_output, extra_len).to(device)  # (B,)
    steps = int(limits.max())
    banned = banned_pieces(model, device)
    fused = fused_step(model) if head_mask is None else None
    if fused is not None:
        enc = fused.encode(src)
        state = fused.start_state(enc, capacity=steps)
    else:
        enc = model.encode(src, head_mask=head_mask)
        state = model.start_state(enc, capacity=steps)
    try:
        if b == 1:
            return [_one_sentence(model, enc, state, fused, pick, steps, banned, min_len, head_mask, stop)]
        return _rows_loop(model, enc, state, fused, pick, limits, steps, banned, min_len, head_mask, stop)
    finally:
        if fused is not None:
            fused.release(state)  # its caches' memory serves the next search


def _rows_loop(
    model: Transformer,
    enc: Encoded,
    state: DecoderState,
    fused: FusedStep | None,
    pick: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    limits: torch.Tensor,
    steps: int,
    banned: torch.Tensor,
    min_len: int,
    head_mask: HeadMask | None,
    stop: Callable[[], bool] | None,
) -> list[Hypothesis]:
    """`_pick_loop` for a batch: the chosen pieces written into (B, L) tables, finished rows dropped."""
    cfg = model.cfg
    b, device = limits.size(0), limits.device
    tokens = torch.full((b, steps), cfg.pad_id, dtype=torch.long, device=device)  # (B, L)
    logprobs = torch.zeros(b, steps, device=device)  # (B, L)
    lengths = limits.clone()  # pieces scored per row, EOS included
    alive = torch.arange(b, device=device)  # the original row of each live batch row
    alive_limits = limits  # the step limit of each live batch row
    step_input = torch.full((b, 1), cfg.bos_id, dtype=torch.long, device=device)
    for step in range(steps):
        check_stop(stop)
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
            n = int((~done).sum())
            if n == 0:
                break
            # the live rows past the first n move into the finished rows among the first n: the caches copy those
            # rows only, not every row that stays (the rows' order is no row's business: `alive` keeps track)
            dst, src = done[:n].nonzero().squeeze(1), (~done[n:]).nonzero().squeeze(1) + n
            order = torch.arange(n, device=device)
            order[dst] = src
            alive, alive_limits, chosen = alive[order], alive_limits[order], chosen[order]
            state.move_rows(dst, src, n)
            enc = enc.move_rows(dst, src, n)
        step_input = chosen[:, None]  # (n, 1)
    return _hypotheses(tokens, logprobs, lengths, cfg.eos_id)


def _one_sentence(
    model: Transformer,
    enc: Encoded,
    state: DecoderState,
    fused: FusedStep | None,
    pick: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    steps: int,
    banned: torch.Tensor,
    min_len: int,
    head_mask: HeadMask | None,
    stop: Callable[[], bool] | None,
) -> Hypothesis:
    """`_pick_loop` for a batch of one (`tt translate "…"`, the REPL, a server at low load): the same
    steps and choices, with the pieces kept in Python lists rather than written into (B, L) tables and
    no rows to drop, which spares a step five or six tensor operations (bench/README.md)."""
    eos_id = model.cfg.eos_id
    tokens: list[int] = []
    logprobs: list[float] = []
    step_input = torch.full((1, 1), model.cfg.bos_id, dtype=torch.long, device=enc.memory.device)
    for step in range(steps):
        check_stop(stop)
        lp = next_logprobs(
            model, step_input, enc, state, banned=banned, ban_eos=step < min_len, head_mask=head_mask, fused=fused
        )
        chosen, chosen_lp = pick(lp)  # (1,), (1,)
        del lp
        piece = int(chosen)
        logprobs.append(float(chosen_lp))
        if piece == eos_id:
            break
        tokens.append(piece)
        step_input = chosen.view(1, 1)
    return Hypothesis(tokens, logprobs, sum(logprobs))


def check_stop(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise Stopped("the decode was stopped by its caller")


def _most_probable(lp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy's choice: the first most probable piece of each row, and its log-probability (in C where
    core/model/native is built: torch.max's answer, ~10× faster over a batch's rows)."""
    found = native.best(lp)
    if found is not None:
        return found
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
    `min_len` bans EOS for that many steps (benchmarks use it to decode a fixed length). A batch is searched in
    parts at once where other processes crowd the cores (core.decode.parts).
    """

    def search(rows: torch.Tensor) -> list[Hypothesis]:
        return _pick_loop(
            model,
            rows,
            _most_probable,
            max_output=max_output,
            extra_len=extra_len,
            min_len=min_len,
            head_mask=head_mask,
            stop=stop,
        )

    return in_parts(search, src, model.cfg.pad_id) if splittable(model, head_mask) else search(src)


def splittable(model: Transformer, head_mask: HeadMask | None = None) -> bool:
    """Whether a batch's search may run in parts at once (core.decode.parts): the fused step's (no hooks see the
    rows, nothing is switched off)."""
    return head_mask is None and fused_step(model) is not None


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
