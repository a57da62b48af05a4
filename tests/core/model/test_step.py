"""The fused decoder step computes what the modules compute, and steps aside where the modules must run."""

from __future__ import annotations

import pytest
import torch

from core.decode.search import beam_search, greedy, pad_batch
from core.model.config import preset
from core.model.fast import fast_model, packed_model
from core.model.step import FusedStep, fused_step
from core.model.transformer import Transformer


def model_of(norm: str = "post", seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=40, norm=norm, **overrides)).eval()


def src_batch() -> torch.Tensor:
    return pad_batch([[5, 9, 12, 7, 3], [8, 3], [30, 31, 32, 3]], 0)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("packed", [False, True])
@torch.inference_mode()
def test_fused_steps_equal_the_modules_steps(norm, packed):
    model = model_of(norm, n_encoder_layers=2, n_decoder_layers=3)
    if packed:
        model = packed_model(model)
    src = src_batch()
    enc = model.encode(src)
    ref_state, fused_state = model.start_state(enc, capacity=6), model.start_state(enc, capacity=6)
    step = fused_step(model)
    assert step is not None
    tokens = torch.tensor([[2], [2], [2]])
    for _ in range(6):
        ref = model.decode(tokens, enc, state=ref_state).logits[:, -1]
        got = step(tokens, enc, fused_state)
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
        for a, b in zip(ref_state.self_attn, fused_state.self_attn):
            torch.testing.assert_close(a.k, b.k, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(a.v, b.v, rtol=1e-5, atol=1e-5)
        tokens = ref.argmax(-1, keepdim=True)
    assert fused_state.length == ref_state.length == 6


def test_searches_run_the_fused_step_and_decode_the_same(monkeypatch):
    model = model_of(seed=3)
    src = src_batch()
    steps, call = [], FusedStep.__call__
    monkeypatch.setattr(FusedStep, "__call__", lambda self, *a: steps.append(1) or call(self, *a))
    fused_greedy = [h.tokens for h in greedy(model, src, max_output=8)]
    assert steps  # greedy took the fused path
    steps.clear()
    fused_beam = [h[0].tokens for h in beam_search(model, src, beam_size=3, max_output=8)]
    assert steps  # and so did beam search
    # A hook (what tt inspect reads through) sends the searches through the modules: same outputs.
    calls = []
    handle = model.decoder_layers[0].register_forward_hook(lambda *_: calls.append(1))
    try:
        assert fused_step(model) is None
        assert [h.tokens for h in greedy(model, src, max_output=8)] == fused_greedy
        assert [h[0].tokens for h in beam_search(model, src, beam_size=3, max_output=8)] == fused_beam
    finally:
        handle.remove()
    assert calls  # the modules ran


def test_no_fused_step_in_training_or_for_quantized_layers():
    model = model_of()
    assert fused_step(model.train()) is None
    model.eval()
    assert fused_step(fast_model(model, "int8")) is None
    assert fused_step(fast_model(model, "bf16")) is None
    assert fused_step(model) is not None


def test_the_fused_weights_follow_an_update_in_place():
    model = model_of()
    first = fused_step(model)
    assert fused_step(model) is first  # built once
    with torch.no_grad():
        model.decoder_layers[0].self_attn.w_q.weight.mul_(0.5)  # an optimizer step does this in place
    second = fused_step(model)
    assert second is not first
    src = src_batch()
    with torch.inference_mode():
        enc = model.encode(src)
        a, b = model.start_state(enc), model.start_state(enc)
        tokens = torch.tensor([[2], [2], [2]])
        torch.testing.assert_close(second(tokens, enc, b), model.decode(tokens, enc, state=a).logits[:, -1])
