"""Beam search's stop rule: a sentence stops once `beam` hypotheses have finished AND its best candidate
at some step was an EOS (its top beam has ended), not at the `beam`-th finished hypothesis alone."""

from __future__ import annotations

import pytest
import torch

from core.decode.search import beam_search, length_penalty, pad_batch
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


def test_the_shipped_model_finds_the_better_scoring_translation():
    """On the real model: stopping at the 4th finished hypothesis returned "I have no car." (-1.46);
    the top beam was still alive and ends as "I don't have a car." (-0.49)."""
    from core.checkpoint import load_model
    from core.decode.source import prepare_source

    loaded = load_model(None)
    cfg, tok = loaded.cfg, loaded.tokenizer
    src = pad_batch([prepare_source(tok, "Je n'ai pas de voiture.", cfg.max_len).ids], cfg.pad_id)
    (hyps,) = beam_search(loaded.model, src, beam_size=4, alpha=0.6, n_best=None)
    by_text = {tok.decode(h.tokens): h.score for h in hyps}
    assert tok.decode(hyps[0].tokens) == "I don't have a car."
    assert hyps[0].score == pytest.approx(-0.486, abs=0.01)
    assert by_text["I have no car."] == pytest.approx(-1.455, abs=0.01)
