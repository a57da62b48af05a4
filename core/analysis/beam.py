"""What beam search did, step by step, for one sentence: the TUI's beam mode reads these.

`beam_steps` runs the very same `beam_search` (through its `on_step` hook), so the trace and the
translation can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

from core.decode.beam import FINISHED, KEPT, StepCandidates, beam_search
from core.decode.search import EXTRA_LEN
from core.model.transformer import Transformer

Fate = Literal["kept", "pruned", "finished"]
_FATES: dict[int, Fate] = {KEPT: "kept", FINISHED: "finished"}


@dataclass(frozen=True)
class BeamCandidate:
    """One extension of a live beam that made the step's shortlist (the 2·beam best).

    The other extensions of the live beams (vocabulary × beam of them) are pruned without being
    listed: they score below every shortlisted one.
    """

    tokens: list[int]  # the output so far with this candidate's piece last (EOS included when it ends)
    token: int  # the piece this step adds
    parent: int  # which beam it extends: its index among the previous step's kept candidates
    # (step 0: every candidate extends the empty output, parent 0)
    logprob: float  # log p(token | source, parent's output)
    score: float  # raw cumulative log-probability of `tokens`
    fate: Fate  # kept (a beam for the next step), pruned, or finished (EOS among the top `beam`)


@dataclass(frozen=True)
class RankedHypothesis:
    """A finished hypothesis in the final length-penalty re-ranking."""

    tokens: list[int]  # output pieces, without EOS
    raw_score: float  # log p(Y | X)
    length: int  # |Y|: scored pieces, EOS included when produced
    normalised: float  # raw_score / lp(|Y|): what beam search ranks by
    rank: int  # 0 = the translation


@dataclass
class BeamStep:
    index: int  # output position t (0 = the first piece after BOS)
    candidates: list[BeamCandidate]  # best raw score first
    ranking: list[RankedHypothesis] = field(default_factory=list)  # filled on the last step only


def beam_steps(
    model: Transformer,
    src: torch.Tensor,
    beam_size: int = 4,
    alpha: float = 0.6,
    extra_len: int = EXTRA_LEN,
    *,
    max_output: int | None = None,
) -> list[BeamStep]:
    """Beam search over ONE source (1, S), recording every step's shortlist and the final ranking.

    The last step's `ranking` holds every finished hypothesis, best normalised score first; its
    first entry is what `beam_search(..., n_best=1)` returns.
    """
    if src.size(0) != 1:
        raise ValueError(f"beam_steps traces one sentence; got a batch of {src.size(0)}")
    steps: list[BeamStep] = []

    def record(step: int, c: StepCandidates) -> None:
        steps.append(
            BeamStep(
                step,
                [
                    BeamCandidate(
                        tokens=parent + [token],
                        token=token,
                        parent=p,
                        logprob=lp,
                        score=score,
                        fate=_FATES.get(fate, "pruned"),
                    )
                    for parent, p, token, lp, score, fate in zip(
                        c.parents, c.parent_index, c.tokens, c.logprobs, c.scores, c.fates
                    )
                ],
            )
        )

    (hyps,) = beam_search(
        model,
        src,
        beam_size=beam_size,
        alpha=alpha,
        extra_len=extra_len,
        max_output=max_output,
        n_best=None,
        on_step=record,
    )
    steps[-1].ranking = [
        RankedHypothesis(h.tokens, h.logprob, len(h.token_logprobs), h.score, rank) for rank, h in enumerate(hyps)
    ]
    return steps
