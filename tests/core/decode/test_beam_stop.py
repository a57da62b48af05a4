"""Beam search's stop rule: a sentence stops once `beam` hypotheses have finished AND its best candidate
at some step was an EOS (its top beam has ended), not at the `beam`-th finished hypothesis alone."""

from __future__ import annotations

import pytest
import torch

from core.decode.beam import beam_search, length_penalty
from core.decode.search import pad_batch
from tests.conftest import ROOT
from tests.core.decode.test_beam_limits import A, constant_model


def test_search_goes_on_while_the_top_beam_is_alive():
    # p(A) = 0.9 at every step, p(EOS) = 0.05: the best candidate is never an EOS, so one hypothesis
    # finishes per step (EOS ranks second) and after two steps two have finished. Stopping there would
    # return the empty output (log 0.05 = -3.0); the live beam A^6 reaches the limit at -0.63 / lp(6).
    model = constant_model({A: 0.9, 3: 0.05})
    (hyps,) = beam_search(model, pad_batch([[7, 8, 3]], 0), beam_size=2, alpha=0.6, max_output=6, n_best=None)
    assert hyps[0].tokens == [A] * 6
    assert hyps[0].score == pytest.approx(6 * torch.tensor(0.9).log().item() / length_penalty(6, 0.6), abs=1e-5)
    assert len(hyps) == 6 + 2  # one per step, the last step's two live beams


def test_search_stops_once_the_top_beam_has_ended_and_beam_hypotheses_are_in():
    # p(EOS) = 0.6 is the best candidate at every step: step 0 finishes "" (the top candidate), step 1
    # "A" + EOS, the second finished hypothesis: the search stops there, far from the limit of 20.
    model = constant_model({3: 0.6, A: 0.3})
    (hyps,) = beam_search(model, pad_batch([[7, 8, 3]], 0), beam_size=2, alpha=0.6, max_output=20, n_best=None)
    assert sorted(h.tokens for h in hyps) == [[], [A]]


def test_the_shipped_model_finds_better_scoring_translations():
    """On the real model, over the 66 sentences of docs/everyday and docs/ood and one written for this test:
    what stopping at the 4th finished hypothesis would have returned is the best of the hypotheses finished by
    then (the shortest ones: one step finishes hypotheses of one length). Going on until the top beam has ended
    never scores lower and, on at least one sentence, finds a better-scoring translation (the shipped models
    before session 22: "Le gouvernement souhaite simplifier…", "Le conseil municipal a voté…", "Je n'ai pas de
    voiture."; session 22's finds it on none of the 66, and on the guitar line; session 27's on neither, and on
    "Cette histoire est vraiment terrifiante.", by 0.41)."""
    from core.checkpoint import load_model
    from core.decode.source import prepare_source

    loaded = load_model(None)
    cfg, tok = loaded.cfg, loaded.tokenizer
    lines = [*(ROOT / "docs/everyday/everyday.fr").read_text().splitlines()]
    lines += (ROOT / "docs/ood/ood.fr").read_text().splitlines()
    lines += ["Un jeune homme avec une veste rouge tenant maladroitement une guitare."]
    lines += ["Cette histoire est vraiment terrifiante."]
    better = 0
    for line in lines:
        src = pad_batch([prepare_source(tok, line, cfg.max_len).ids], cfg.pad_id)
        (hyps,) = beam_search(loaded.model, src, beam_size=4, alpha=0.6, n_best=None)
        cut = sorted(len(h.tokens) for h in hyps)[3]  # the step at which the 4th hypothesis finished
        early = max(h.score for h in hyps if len(h.tokens) <= cut)
        assert hyps[0].score >= early
        better += hyps[0].score > early + 1e-6
    assert len(lines) == 68 and better >= 1
