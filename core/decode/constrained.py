"""Lexically constrained beam search: every given phrase appears in the output, where the model puts it.

Dynamic beam allocation (Post & Vilar 2018, "Fast Lexically Constrained Decoding with Dynamic Beam
Allocation"; after Hokamp & Liu 2017's grid beam search): each hypothesis counts the constraint pieces it
has produced; at every step the candidates are, for each hypothesis, its best next pieces, the next piece of
the constraint it is in the middle of, and the first piece of each constraint it has not begun; the beam is
then shared out among *banks* by that count, so hypotheses that have met more of the constraints are not
crowded out by freer, more probable ones. A hypothesis may end (EOS) only once every constraint is met, so a
forced term lands where the model, reading its own prefix, finds it most probable — "a bill on pensions",
not the placeholder's "bill a on the pensions".

A constraint is a list of alternatives (a term and its plural), each a list of piece ids: met by any one.
A hypothesis that leaves a constraint half-written loses that progress. At the length limit the live
hypotheses finish as they are; `met` says whether a hypothesis holds every constraint.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from core.decode.beam import length_penalty
from core.decode.method import EXTRA_LEN
from core.decode.search import Hypothesis
from core.model.transformer import Transformer

Constraint = list[list[int]]  # alternatives, each a sequence of piece ids


@dataclass(frozen=True)
class _State:
    tokens: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    done: frozenset[int] = frozenset()  # constraints met
    # the constraint in progress: (its index, pieces written, the alternatives those pieces still match)
    active: tuple[int, int, frozenset[int]] | None = None

    def met_pieces(self, constraints: list[Constraint]) -> int:
        """The bank: pieces of constraints produced (the shortest alternative's length for one met)."""
        met = sum(min(len(alt) for alt in constraints[c]) for c in self.done)
        return met + (self.active[1] if self.active else 0)

    def next_pieces(self, constraints: list[Constraint]) -> set[int]:
        """The pieces that go on with the constraint in progress, or begin one not yet met."""
        if self.active is not None:
            c, j, alts = self.active
            return {constraints[c][a][j] for a in alts if j < len(constraints[c][a])}
        return {alt[0] for c, alts in enumerate(constraints) if c not in self.done for alt in alts}

    def advance(self, token: int, logprob: float, constraints: list[Constraint]) -> _State:
        done, active = self.done, None
        if self.active is not None:  # go on, or leave it half-written (a fresh start may begin here)
            c, j, alts = self.active
            still = frozenset(a for a in alts if j < len(constraints[c][a]) and constraints[c][a][j] == token)
            active = (c, j + 1, still) if still else None
        if active is None:
            for c, alts in enumerate(constraints):
                starts = frozenset(a for a, alt in enumerate(alts) if alt[0] == token)
                if c not in done and starts:
                    active = (c, 1, starts)
                    break
        if active is not None:
            c, j, alts = active
            if any(len(constraints[c][a]) == j for a in alts):  # one alternative written whole: met
                done, active = done | {c}, None
        return _State(self.tokens + (token,), self.logprobs + (logprob,), done, active)


@dataclass
class ConstrainedResult:
    hypotheses: list[Hypothesis] = field(default_factory=list)  # best first
    met: list[bool] = field(default_factory=list)  # per hypothesis: every constraint in it


@torch.inference_mode()
def constrained_beam_search(
    model: Transformer,
    src: torch.Tensor,
    constraints: list[Constraint],
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    extra_len: int = EXTRA_LEN,
    n_best: int = 1,
) -> ConstrainedResult:
    """Beam search for one source (1, S) whose outputs hold every constraint (see the module's docstring).

    Each bank (constraint pieces met: 0 … all) keeps `beam_size` rows, as grid beam search does: affordable
    here, where a glossary sentence has a few short terms. No cache: each step reads the whole prefix."""
    cfg = model.cfg
    constraints = [[alt for alt in c if alt] for c in constraints]
    constraints = [c for c in constraints if c]
    per_bank = max(beam_size, 1)
    src_len = int(((src != cfg.pad_id) & (src != cfg.eos_id)).sum())
    limit = min(src_len + extra_len + sum(max(map(len, c)) for c in constraints), cfg.max_len - 1)
    enc = model.encode(src)
    live = [_State()]
    finished: list[tuple[float, _State, bool]] = []
    for step in range(limit):
        tgt = torch.tensor([[cfg.bos_id, *s.tokens] for s in live], device=src.device)  # (K, t+1)
        logits = model.decode(tgt, enc.select(torch.zeros(len(live), dtype=torch.long, device=src.device)))
        lp = logits.logits[:, -1].float().log_softmax(-1)  # (K, vocab)
        lp[:, cfg.pad_id] = lp[:, cfg.bos_id] = float("-inf")
        candidates: dict[tuple, tuple[float, _State]] = {}
        for k, state in enumerate(live):
            base = sum(state.logprobs)
            wanted = set(lp[k].topk(per_bank).indices.tolist()) | state.next_pieces(constraints)
            for token in wanted:
                logprob = float(lp[k, token])
                if logprob == float("-inf"):
                    continue
                if token == cfg.eos_id:
                    if len(state.done) == len(constraints) and state.active is None:
                        ended = _State(state.tokens, state.logprobs + (logprob,), state.done)  # EOS scored, not kept
                        finished.append((base + logprob, ended, True))
                    continue
                new = state.advance(token, logprob, constraints)
                candidates[new.tokens] = (base + logprob, new)
        by_bank: dict[int, list[tuple[float, _State]]] = {}
        for score, state in candidates.values():
            by_bank.setdefault(state.met_pieces(constraints), []).append((score, state))
        live = [s for bank in by_bank.values() for _, s in sorted(bank, key=lambda x: -x[0])[:per_bank]]
        if not live or _enough(finished, live, per_bank, alpha):
            break
    for state in live:  # the length limit: the live hypotheses end as they are
        finished.append((sum(state.logprobs), state, len(state.done) == len(constraints) and state.active is None))
    # every constraint first, then the length-normalised score, as beam search ranks
    ranked = sorted(finished, key=lambda f: (not f[2], -f[0] / length_penalty(len(f[1].logprobs), alpha)))
    out = ConstrainedResult()
    for score, state, met in ranked[:n_best]:
        logprobs = list(state.logprobs)
        out.hypotheses.append(Hypothesis(list(state.tokens), logprobs, score / length_penalty(len(logprobs), alpha)))
        out.met.append(met)
    return out


def _enough(finished, live, per_bank: int, alpha: float) -> bool:
    """Stop when `per_bank` hypotheses holding every constraint have ended and none live can beat the best."""
    complete = sorted(
        (score / length_penalty(len(state.logprobs), alpha) for score, state, met in finished if met), reverse=True
    )
    if len(complete) < per_bank:
        return False
    best_live = max(sum(s.logprobs) / length_penalty(len(s.logprobs) + 1, alpha) for s in live)
    return best_live < complete[0]
