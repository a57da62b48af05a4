"""Explain mode: Eq. 1 written out must reproduce the notes' worked example and the live model's weights."""

from __future__ import annotations

import math

import pytest
import torch

from core.analysis.explain import FAMILIES, attention_steps, explain
from core.decode.stepper import Stepper
from core.errors import TTError


def test_the_cat_sat_worked_example_from_the_notes():
    # ../shared/seeds "The Cat Sat": d_k = 4, so every q·k is divided by √4 = 2.
    keys = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]])  # K_The, K_Cat, K_Sat
    values = torch.eye(3)
    the = attention_steps(keys[0], keys, values)
    assert the.scores.tolist() == [2.0, 0.0, 2.0]
    assert the.scaled.tolist() == [1.0, 0.0, 1.0]
    assert the.weights.tolist() == pytest.approx([0.4223, 0.1554, 0.4223], abs=1e-4)
    cat = attention_steps(keys[1], keys, values)
    assert cat.weights.tolist() == pytest.approx([0.1554, 0.4223, 0.4223], abs=1e-4)
    torch.testing.assert_close(cat.output, cat.weights)  # V = I: the output is the weights themselves


def test_scaling_example_and_mask():
    # The notes' "[6, 4] → scale → [3, 2] → softmax [0.73, 0.27]" (d_k = 4 here so √d_k = 2).
    q = torch.tensor([2.0, 3, 4, 1])
    k = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1]])
    ex = attention_steps(q, k, k)
    assert ex.scores.tolist() == [6.0, 4.0] and ex.scaled.tolist() == [3.0, 2.0]
    assert ex.weights.tolist() == pytest.approx([0.731, 0.269], abs=1e-3)
    masked = attention_steps(q, k, k, torch.tensor([False, True]))
    assert masked.masked[0] == -math.inf and masked.weights.tolist() == [0.0, 1.0]


@pytest.fixture(scope="module")
def decoded(tiny_loaded):
    stepper = Stepper(tiny_loaded, "Il est médecin.")
    stepper.run()
    src = torch.tensor([stepper.source.tokens])
    tgt_in = torch.tensor([stepper.target_inputs])
    with torch.inference_mode():
        _, trace = tiny_loaded.model.trace(src, tgt_in)
    return stepper, trace


@pytest.mark.parametrize("family", FAMILIES)
def test_softmax_equals_the_models_attention_weights(tiny_loaded, decoded, family):
    stepper, trace = decoded
    cfg = tiny_loaded.cfg
    weights = getattr(trace, family)
    n_queries = len(stepper.source.tokens) if family == "encoder_self" else len(stepper.target_inputs)
    for layer in range(len(weights)):
        for head in range(cfg.h):
            for query in {0, n_queries // 2, n_queries - 1}:
                ex = explain(
                    tiny_loaded.model, stepper.source.tokens, stepper.target_inputs,
                    family=family, layer=layer, head=head, query=query,
                    src_pieces=stepper.source.pieces, tgt_pieces=stepper.tokenizer.pieces(stepper.target_inputs),
                )
                torch.testing.assert_close(ex.weights, weights[layer][0, head, query], atol=1e-5, rtol=1e-4)
                assert ex.d_k == cfg.d_k
                torch.testing.assert_close(ex.scaled, ex.scores / math.sqrt(cfg.d_k))
                torch.testing.assert_close(ex.output, ex.weights @ ex.values)
                assert len(ex.key_pieces) == ex.keys.size(0)
    if family == "decoder_self":  # the look-ahead mask hides every later position
        ex = explain(tiny_loaded.model, stepper.source.tokens, stepper.target_inputs, family=family, layer=0, head=0, query=1)
        assert ex.mask.tolist()[:3] == [True, True, False] and float(ex.weights[2:].sum()) == 0.0


def test_explained_heads_rebuild_the_layer_output(tiny_loaded, decoded):
    """Concat(head_1..head_h) W^O is the sub-layer's output: the per-head outputs are the real ones."""
    stepper, _ = decoded
    model = tiny_loaded.model
    src = stepper.source.tokens
    heads = [explain(model, src, [2], family="encoder_self", layer=0, head=h, query=1).output for h in range(tiny_loaded.cfg.h)]
    with torch.inference_mode():
        block = model.encoder_layers[0]
        x = model.src_pos(model.src_embed(torch.tensor([src])))
        want, _ = block.self_attn(block.self_attn_norm.sublayer_input(x))
        got = block.self_attn.w_o(torch.cat(heads))
    torch.testing.assert_close(got, want[0, 1], atol=1e-5, rtol=1e-4)


def test_bad_coordinates_are_clear_errors(tiny_loaded, decoded):
    stepper, _ = decoded
    args = (tiny_loaded.model, stepper.source.tokens, stepper.target_inputs)
    with pytest.raises(TTError, match="layer 9"):
        explain(*args, family="cross", layer=9, head=0, query=0)
    with pytest.raises(TTError, match="head 9"):
        explain(*args, family="cross", layer=0, head=9, query=0)
    with pytest.raises(TTError, match="query position"):
        explain(*args, family="decoder_self", layer=0, head=0, query=99)
