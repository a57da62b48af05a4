"""Stepper: one sentence decoded step by step must agree with batched greedy and a teacher-forced pass."""

from __future__ import annotations

import math

import pytest
import torch

from core.decode.search import greedy
from core.decode.source import prepare_source
from core.decode.stepper import Stepper
from core.decode.trace import attention_trace, top_candidates
from core.errors import TTError

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa

SENTENCE = "Je suis étudiant."


@pytest.fixture()
def stepper(tiny_loaded):
    return Stepper(tiny_loaded, SENTENCE, top_k=5)


def test_run_matches_batched_greedy(tiny_loaded, stepper):
    stepper.run()
    src = torch.tensor([prepare_source(tiny_loaded.tokenizer, SENTENCE, tiny_loaded.cfg.max_len).ids])
    (hyp,) = greedy(tiny_loaded.model, src)
    assert stepper.tokens == hyp.tokens
    assert stepper.finished
    assert [s.logprob for s in stepper.steps] == pytest.approx(hyp.token_logprobs, abs=1e-5)
    assert stepper.output_text == tiny_loaded.tokenizer.decode(hyp.tokens)
    assert stepper.output_text  # the fixture model learned something


def test_step_attention_equals_teacher_forced_trace(tiny_loaded, stepper):
    stepper.run()
    src = torch.tensor([stepper.source.tokens])
    tgt_in = torch.tensor([stepper.target_inputs])  # (1, T)
    with torch.inference_mode():
        enc = tiny_loaded.model.encode(src, need_weights=True)
        dec = tiny_loaded.model.decode(tgt_in, enc, need_weights=True)
        logits, trace = dec.logits, attention_trace(enc, dec)
    for layer, enc in enumerate(trace.encoder_self):
        torch.testing.assert_close(stepper.source.encoder_self[layer], enc[0])
    for t, step in enumerate(stepper.steps):
        torch.testing.assert_close(step.logits, logits[0, t], atol=1e-4, rtol=1e-4)
        for layer in range(tiny_loaded.cfg.n_decoder_layers):
            assert step.decoder_self[layer].shape == (tiny_loaded.cfg.h, t + 1)
            torch.testing.assert_close(
                step.decoder_self[layer], trace.decoder_self[layer][0, :, t, : t + 1], atol=1e-5, rtol=1e-4
            )
            torch.testing.assert_close(step.cross[layer], trace.cross[layer][0, :, t], atol=1e-5, rtol=1e-4)
            # Each query's weights are a distribution over the keys it may see.
            torch.testing.assert_close(step.cross[layer].sum(-1), torch.ones(tiny_loaded.cfg.h))


def test_candidates_are_sorted_topk_and_chosen_is_first(stepper):
    step = stepper.step()
    assert len(step.candidates) == 5
    probs = [c.prob for c in step.candidates]
    assert probs == sorted(probs, reverse=True)
    assert step.candidates[0].token == step.token and not step.forced
    assert step.index == 0 and step.piece == stepper.tokenizer.pieces([step.token])[0]


def test_temperature_reshapes_but_keeps_model_logprobs(stepper):
    step = stepper.step()
    sharp = top_candidates(step.logits, stepper.tokenizer, 5, temperature=0.5)
    flat = top_candidates(step.logits, stepper.tokenizer, 5, temperature=5.0)
    assert [c.token for c in sharp] == [c.token for c in flat]  # the order never changes
    assert sharp[0].prob > step.candidates[0].prob > flat[0].prob
    # The stored trace is the model itself (temperature 1): prob and logprob are one number.
    assert [c.prob for c in step.candidates] == pytest.approx([math.exp(c.logprob) for c in step.candidates])
    assert [c.logprob for c in sharp] == [c.logprob for c in flat]
    assert len(stepper.candidates(step, top_k=3)) == 3
    with pytest.raises(TTError, match="temperature"):
        top_candidates(step.logits, stepper.tokenizer, 5, temperature=0)


def test_back_then_step_gives_the_same_step(stepper):
    first = [stepper.step() for _ in range(3)]
    assert stepper.back() and len(stepper.steps) == 2
    again = stepper.step()
    assert again.token == first[2].token
    torch.testing.assert_close(again.logits, first[2].logits)
    torch.testing.assert_close(again.decoder_self[0], first[2].decoder_self[0])
    stepper.restart()
    assert stepper.steps == [] and not stepper.back()
    assert stepper.step().token == first[0].token


def test_forcing_and_branch(tiny_loaded, stepper):
    stepper.run()
    original = list(stepper.tokens)
    alternative = stepper.steps[1].candidates[1].token  # the runner-up at step 1
    branch = stepper.branch(1, alternative)
    assert stepper.tokens == original  # the original is untouched
    assert branch.steps[0] is stepper.steps[0] and branch.steps[1].forced
    assert branch.steps[1].token == alternative
    branch.run()
    assert branch.tokens[:2] == [original[0], alternative]
    # The branch is what teacher forcing on its own prefix predicts: check by forcing from scratch.
    fresh = Stepper(tiny_loaded, SENTENCE, top_k=5)
    fresh.step()
    fresh.step(force=alternative)
    fresh.run()
    assert fresh.tokens == branch.tokens
    torch.testing.assert_close(fresh.steps[-1].logits, branch.steps[-1].logits, atol=1e-4, rtol=1e-4)


def test_finished_stepper_stops_and_bad_input_is_a_clear_error(tiny_loaded, stepper):
    stepper.run()
    assert stepper.step() is None
    assert stepper.steps[-1].token == tiny_loaded.cfg.eos_id or len(stepper.steps) == stepper.limit
    with pytest.raises(TTError, match="outside the vocabulary"):
        Stepper(tiny_loaded, SENTENCE).step(force=10_000)
    with pytest.raises(TTError, match="empty"):
        Stepper(tiny_loaded, "   ")
    with pytest.raises(TTError, match="cannot branch"):
        stepper.branch(99, 5)


def test_the_source_is_prepared_as_translate_prepares_it(tiny_loaded):
    """Control characters and surrounding blanks go, as in `tt translate`; an over-long line keeps its head."""
    messy = Stepper(tiny_loaded, "  Je suis\x00étudiant.\t")
    clean = Stepper(tiny_loaded, "Je suis étudiant.")
    assert messy.source.tokens == clean.source.tokens and messy.source.text == "  Je suis\x00étudiant.\t"
    assert "replaced 1 control" in messy.warnings[0] and clean.warnings == []
    long = Stepper(tiny_loaded, " ".join(["Je suis étudiant."] * 40))
    assert len(long.source.tokens) == tiny_loaded.cfg.max_len and long.source.tokens[-1] == tiny_loaded.cfg.eos_id
    assert long.source.tokens[:5] == clean.source.tokens[:5]  # the head is kept
    assert any("translated the first" in w for w in long.warnings)
