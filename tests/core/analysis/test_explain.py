"""Explain mode: every number of one head's Eq. 1 must rebuild what the layers compute, checked
against torch's own attention and a forward by hand (the notes' worked examples: test_seeds.py)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from core.analysis.explain import FAMILIES, explain
from core.decode.stepper import Stepper
from core.errors import TTError


@pytest.fixture(scope="module")
def decoded(tiny_loaded):
    stepper = Stepper(tiny_loaded, "Il est médecin.")
    stepper.run()
    return stepper


def explain_at(loaded, stepper, family, layer, head, query):
    return explain(
        loaded.model,
        stepper.source.tokens,
        stepper.target_inputs,
        family=family,
        layer=layer,
        head=head,
        query=query,
        src_pieces=stepper.source.pieces,
        tgt_pieces=stepper.tokenizer.pieces(stepper.target_inputs),
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_each_heads_numbers_agree_with_torchs_attention_and_the_stepper(tiny_loaded, decoded, family):
    """Output by torch's SDPA from explain's q, k, v; weights as the KV-cached Stepper saw them."""
    stepper, cfg = decoded, tiny_loaded.cfg
    n_layers = cfg.n_encoder_layers if family == "encoder_self" else cfg.n_decoder_layers
    n_queries = len(stepper.source.tokens) if family == "encoder_self" else len(stepper.target_inputs)
    for layer in range(n_layers):
        for head in range(cfg.h):
            for query in {0, n_queries // 2, n_queries - 1}:
                ex = explain_at(tiny_loaded, stepper, family, layer, head, query)
                want = F.scaled_dot_product_attention(ex.query[None], ex.keys, ex.values, attn_mask=ex.mask[None])[0]
                torch.testing.assert_close(ex.output, want, atol=1e-5, rtol=1e-4)
                torch.testing.assert_close(ex.scaled * math.sqrt(cfg.d_k), ex.scores)
                torch.testing.assert_close(ex.masked[ex.mask], ex.scaled[ex.mask], atol=1e-5, rtol=1e-4)
                assert ex.d_k == cfg.d_k and len(ex.key_pieces) == ex.keys.size(0)
                if family == "encoder_self":
                    seen = stepper.source.encoder_self[layer][head, query]
                else:
                    step = stepper.steps[query]
                    seen = (step.decoder_self if family == "decoder_self" else step.cross)[layer][head]
                torch.testing.assert_close(ex.weights[: seen.numel()], seen, atol=1e-5, rtol=1e-4)
    if family == "decoder_self":  # the look-ahead mask hides every later position
        ex = explain_at(tiny_loaded, stepper, family, 0, 0, 1)
        assert ex.mask.tolist()[:3] == [True, True, False] and float(ex.weights[2:].sum()) == 0.0


def by_hand(model, src: list[int], tgt_in: list[int], family: str, layer: int):
    """The sub-layer's input, memory and mask, by running the layers below one at a time (no explain code)."""
    src_t, tgt_t = torch.tensor([src]), torch.tensor([tgt_in])
    enc = model.encode(src_t)
    if family == "encoder_self":
        x = model.src_pos(model.src_embed(src_t))  # (1, S, d_model)
        for below in model.encoder_layers[:layer]:
            x, _ = below(x, src_mask=enc.src_mask)
        block = model.encoder_layers[layer]
        return block.self_attn, block.self_attn_norm.sublayer_input(x), None, enc.src_mask, False
    x = model.tgt_pos(model.tgt_embed(tgt_t))  # (1, T, d_model)
    for below in model.decoder_layers[:layer]:
        x, _, _ = below(x, memory=enc.memory, src_mask=enc.src_mask, causal=True)
    block = model.decoder_layers[layer]
    y = block.self_attn_norm.sublayer_input(x)
    if family == "decoder_self":
        return block.self_attn, y, None, None, True
    x = block.self_attn_norm(x, block.self_attn(y, is_causal=True)[0])
    return block.cross_attn, block.cross_attn_norm.sublayer_input(x), enc.memory, enc.src_mask, False


@pytest.mark.parametrize("family", FAMILIES)
def test_explained_heads_rebuild_the_sublayer_output(tiny_loaded, decoded, family):
    """Concat(head_1..head_h) W^O is the sub-layer's output (fused path), and q is x W^Q of its real input."""
    stepper, model, cfg = decoded, tiny_loaded.model, tiny_loaded.cfg
    layer, query = cfg.n_decoder_layers - 1, 1
    with torch.inference_mode():
        attn, y, memory, mask, causal = by_hand(model, stepper.source.tokens, stepper.target_inputs, family, layer)
        want, _ = attn(y, memory, mask, is_causal=causal)  # (1, T_q, d_model)
        exs = [explain_at(tiny_loaded, stepper, family, layer, h, query) for h in range(cfg.h)]
        got = attn.w_o(torch.cat([ex.output for ex in exs]))
        q_all = attn.w_q(y[0, query])  # (d_model,)
    torch.testing.assert_close(got, want[0, query], atol=1e-5, rtol=1e-4)
    for h, ex in enumerate(exs):
        torch.testing.assert_close(ex.query, q_all[h * cfg.d_k : (h + 1) * cfg.d_k], atol=1e-5, rtol=1e-4)


def test_bad_coordinates_are_clear_errors(tiny_loaded, decoded):
    stepper = decoded
    args = (tiny_loaded.model, stepper.source.tokens, stepper.target_inputs)
    with pytest.raises(TTError, match="layer 9"):
        explain(*args, family="cross", layer=9, head=0, query=0)
    with pytest.raises(TTError, match="head 9"):
        explain(*args, family="cross", layer=0, head=9, query=0)
    with pytest.raises(TTError, match="query position"):
        explain(*args, family="decoder_self", layer=0, head=0, query=99)
