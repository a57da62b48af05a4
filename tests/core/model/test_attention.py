"""core.model.attention: the manual and fused paths keep one contract (fp32, within 1e-5), head mask included."""

from __future__ import annotations

import math

import pytest
import torch

from core.model.attention import (
    HeadMask,
    KVCache,
    MultiHeadAttention,
    scaled_dot_product_attention,
)
from core.model.config import preset
from core.model.masks import combine, padding_mask, subsequent_mask

TOL = dict(atol=1e-5, rtol=1e-5)


def make_mha(seed: int = 0, d_model: int = 32, h: int = 4) -> MultiHeadAttention:
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_model, h).eval()
    with torch.no_grad():  # non-zero biases, so a path that forgets one would show
        for layer in (mha.w_q, mha.w_kv, mha.w_o):
            layer.bias.normal_(0, 0.1)
    return mha


def test_manual_attention_is_equation_1():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 6)
    out, weights, scores = scaled_dot_product_attention(q, k, v)
    # torch's own kernel is the independent reference for the output.
    torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(q, k, v), **TOL)
    torch.testing.assert_close(scores, torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(8), **TOL)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5), **TOL)
    assert out.shape == (2, 3, 5, 6)


def test_manual_attention_gives_zero_to_masked_keys_and_sums_to_one():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 8)
    mask = subsequent_mask(4)
    _, weights, scores = scaled_dot_product_attention(q, k, v, mask)
    assert weights.masked_select(~mask).eq(0).all()
    assert scores.masked_select(~mask).eq(float("-inf")).all()  # pre-softmax: the mask applied
    assert scores.masked_select(mask).isfinite().all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 1, 4))


def test_fully_masked_query_gets_zero_attention_not_nan():
    q = k = v = torch.randn(1, 1, 2, 4)
    mask = torch.tensor([[True, False], [False, False]])
    out, weights, _ = scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any()
    assert weights[0, 0, 1].eq(0).all() and out[0, 0, 1].eq(0).all()


@pytest.mark.parametrize("which", ["none", "padding", "causal_mask", "is_causal", "padding+causal"])
def test_fused_and_manual_self_attention_agree(which):
    mha = make_mha()
    torch.manual_seed(1)
    x = torch.randn(3, 6, 32)
    tokens = torch.tensor([[4, 5, 6, 7, 8, 9], [4, 5, 6, 0, 0, 0], [4, 0, 0, 0, 0, 0]])
    mask, is_causal = {
        "none": (None, False),
        "padding": (padding_mask(tokens, 0), False),
        "causal_mask": (subsequent_mask(6), False),
        "is_causal": (None, True),
        "padding+causal": (combine(padding_mask(tokens, 0), subsequent_mask(6)), False),
    }[which]
    fused, none = mha(x, mask=mask, is_causal=is_causal)
    manual, internals = mha(x, mask=mask, is_causal=is_causal, need_weights=True)
    assert none is None
    weights = internals.weights
    assert weights.shape == internals.scores.shape == (3, 4, 6, 6)
    torch.testing.assert_close(fused, manual, **TOL)
    if "causal" in which:
        assert weights[:, :, 0, 1:].eq(0).all()  # the first query sees only itself
    if "padding" in which:
        assert weights[2, :, :, 1:].eq(0).all()  # the one-token sentence attends only to itself


def test_fused_and_manual_agree_on_a_query_with_nothing_to_attend_to():
    """An all-padding source row: both paths give zero attention (no NaN that would spread)."""
    mha = make_mha()
    x, memory = torch.randn(2, 3, 32), torch.randn(2, 4, 32)
    src_mask = padding_mask(torch.tensor([[5, 6, 0, 0], [0, 0, 0, 0]]), 0)
    fused, _ = mha(x, memory, src_mask)
    manual, internals = mha(x, memory, src_mask, need_weights=True)
    assert not fused.isnan().any()
    torch.testing.assert_close(fused, manual, **TOL)
    assert internals.weights[1].eq(0).all()


def test_fused_and_manual_cross_attention_agree():
    mha = make_mha()
    torch.manual_seed(2)
    x, memory = torch.randn(2, 3, 32), torch.randn(2, 5, 32)
    src_mask = padding_mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]), 0)
    fused, _ = mha(x, memory, src_mask)
    manual, internals = mha(x, memory, src_mask, need_weights=True)
    torch.testing.assert_close(fused, manual, **TOL)
    assert internals.weights.shape == (2, 4, 3, 5)
    assert internals.weights[1, :, :, 2:].eq(0).all()
    # With the memory projected once into a cache (static_kv) the result is the same.
    cached, _ = mha(x, mask=src_mask, cache=mha.project_kv(memory), static_kv=True)
    torch.testing.assert_close(cached, fused, **TOL)


def test_heads_are_independent_blocks_of_d_k():
    """MultiHead = Concat(head_1..head_h) W^O: head i only reads columns i·d_k..(i+1)·d_k of Q, K, V."""
    mha = make_mha(d_model=8, h=2)
    torch.manual_seed(3)
    x = torch.randn(1, 4, 8)
    _, internals = mha(x, need_weights=True)
    q = mha.w_q(x)
    k, _ = mha.w_kv(x).chunk(2, dim=-1)
    head1 = torch.softmax(q[0, :, 4:] @ k[0, :, 4:].T / 2.0, dim=-1)  # d_k = 4, √d_k = 2
    torch.testing.assert_close(internals.weights[0, 1], head1, **TOL)
    torch.testing.assert_close(internals.scores[0, 1], q[0, :, 4:] @ k[0, :, 4:].T / 2.0, **TOL)


@pytest.mark.parametrize("need_weights", [False, True])
def test_incremental_self_attention_with_a_cache_matches_causal_full(need_weights):
    mha = make_mha()
    torch.manual_seed(4)
    x = torch.randn(2, 5, 32)
    full, _ = mha(x, is_causal=True)
    cache = KVCache(torch.zeros(2, 4, 0, 8), torch.zeros(2, 4, 0, 8))
    steps = []
    for t in range(5):
        out, w = mha(x[:, t : t + 1], cache=cache, need_weights=need_weights)
        steps.append(out)
        if need_weights:
            assert w.weights.shape == (2, 4, 1, t + 1)
    assert cache.length == 5
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)


def test_kv_cache_select_reorders_rows():
    k = torch.arange(3.0)[:, None, None, None].expand(3, 1, 2, 1).clone()
    cache = KVCache(k, k + 10)
    cache.select(torch.tensor([2, 2, 0]))
    assert cache.k[:, 0, 0, 0].tolist() == [2.0, 2.0, 0.0]
    assert cache.v[:, 0, 0, 0].tolist() == [12.0, 12.0, 10.0]
    cache.append(torch.zeros(3, 1, 1, 1), torch.zeros(3, 1, 1, 1))
    assert cache.length == 3


def test_kv_cache_keeps_every_position_as_it_grows():
    cache = KVCache(torch.zeros(2, 1, 0, 3), torch.zeros(2, 1, 0, 3))
    for t in range(0, 70, 7):  # ten appends of 7 positions; each must land after the last
        chunk = torch.arange(t, t + 7, dtype=torch.float32)[None, None, :, None].expand(2, 1, 7, 3)
        cache.append(chunk, -chunk)
    assert cache.length == 70
    assert cache.k[0, 0, :, 0].tolist() == list(range(70))
    assert cache.v[1, 0, :, 2].tolist() == [-float(i) for i in range(70)]
    cache.select(torch.tensor([1]))
    cache.append(torch.full((1, 1, 1, 3), 70.0), torch.full((1, 1, 1, 3), -70.0))
    assert cache.k[0, 0, :, 0].tolist() == list(range(71))


def test_kv_cache_pair_writes_keys_and_values_in_one_buffer_and_grows_past_it():
    cache = KVCache.empty(torch.zeros(2, 2, 1, 3, 1))  # (2, B, h, capacity 3, d_k)
    buffer = cache._pair.data_ptr()
    for t in range(5):  # two past the capacity: the pair grows, the positions stay
        cache.append_pair(torch.tensor([[[[t]], [[t + 10]]], [[[-t]], [[-t - 10]]]], dtype=torch.float32))
        k, v = cache.flat_heads()  # (B·h, T, d_k)
        assert k.shape == (2, t + 1, 1)
        if t < 3:
            assert cache._pair.data_ptr() == buffer  # written in place
    assert cache.k[:, 0, :, 0].tolist() == [[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]]
    assert cache.v[:, 0, :, 0].tolist() == [[0, -1, -2, -3, -4], [-10, -11, -12, -13, -14]]
    assert flat_values(cache) == cache.v[:, 0, :, 0].tolist()
    cache.select(torch.tensor([1]))
    cache.append_pair(torch.tensor([[[[99.0]]], [[[-99.0]]]]))
    assert cache.k[0, 0, :, 0].tolist() == [10, 11, 12, 13, 14, 99]
    assert flat_values(cache) == [[-10, -11, -12, -13, -14, -99]]


def flat_values(cache: KVCache) -> list:
    return cache.flat_heads()[1][:, :, 0].tolist()


def test_attention_dropout_only_in_training():
    mha = MultiHeadAttention(16, 2, attention_dropout=0.5)
    x = torch.randn(1, 4, 16)
    mha.eval()
    a, _ = mha(x)
    b, _ = mha(x, need_weights=True)
    torch.testing.assert_close(a, b, **TOL)
    mha.train()
    torch.manual_seed(0)
    c, _ = mha(x, need_weights=True)
    assert not torch.allclose(c, b, atol=1e-4)


def test_causal_flag_and_mask_together_are_refused():
    """The fused path would honour one and the manual path the other: refuse rather than disagree."""
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    with pytest.raises(ValueError, match="not both"):
        mha(x, mask=subsequent_mask(3), is_causal=True)


# ---------------------------------------------------------------------------------- head mask
def by_hand_without_head(mha: MultiHeadAttention, x: torch.Tensor, memory: torch.Tensor | None, mask, head: int):
    """MultiHead with head `head`'s slice zeroed before W^O, from the projections and torch's own SDPA."""
    b, t, d_model = x.shape
    kv_in = x if memory is None else memory
    q = mha.w_q(x).view(b, t, mha.h, mha.d_k).transpose(1, 2)  # (B, h, T_q, d_k)
    k, v = (z.view(b, kv_in.size(1), mha.h, mha.d_k).transpose(1, 2) for z in mha.w_kv(kv_in).chunk(2, dim=-1))
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, T_q, d_k)
    concat = heads.transpose(1, 2).reshape(b, t, d_model).clone()  # (B, T_q, d_model)
    concat[..., head * mha.d_k : (head + 1) * mha.d_k] = 0.0
    return mha.w_o(concat)


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_a_masked_head_is_its_slice_zeroed_before_w_o(cross):
    mha = make_mha()
    torch.manual_seed(5)
    x, memory = torch.randn(2, 3, 32), torch.randn(2, 5, 32)
    mask = padding_mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]), 0) if cross else None
    head_mask = torch.tensor([1.0, 1.0, 0.0, 1.0])
    want = by_hand_without_head(mha, x, memory if cross else None, mask, head=2)
    fused, _ = mha(x, memory if cross else None, mask, head_mask=head_mask)
    manual, internals = mha(x, memory if cross else None, mask, head_mask=head_mask, need_weights=True)
    torch.testing.assert_close(fused, want, **TOL)
    torch.testing.assert_close(manual, want, **TOL)
    assert internals.heads[:, 2].eq(0).all() and internals.heads[:, 1].abs().sum() > 0
    plain, _ = mha(x, memory if cross else None, mask)
    assert not torch.allclose(plain, want, atol=1e-4)  # the head did matter


def test_all_ones_head_mask_is_no_mask_and_rows_can_differ():
    mha = make_mha()
    torch.manual_seed(6)
    x = torch.randn(2, 4, 32)
    plain, _ = mha(x, is_causal=True)
    ones, _ = mha(x, is_causal=True, head_mask=torch.ones(4))
    torch.testing.assert_close(ones, plain, rtol=0, atol=0)
    # (B, h): row 0 as trained, row 1 without head 0.
    rows, _ = mha(x, is_causal=True, head_mask=torch.tensor([[1.0, 1, 1, 1], [0, 1, 1, 1]]))
    torch.testing.assert_close(rows[0], plain[0], **TOL)
    torch.testing.assert_close(rows[1:], mha(x[1:], is_causal=True, head_mask=torch.tensor([0.0, 1, 1, 1]))[0], **TOL)


def test_head_mask_with_a_cache_matches_the_full_masked_pass():
    mha = make_mha()
    torch.manual_seed(7)
    x, head_mask = torch.randn(1, 5, 32), torch.tensor([1.0, 0.0, 1.0, 0.0])
    full, _ = mha(x, is_causal=True, head_mask=head_mask)
    cache = KVCache(torch.zeros(1, 4, 0, 8), torch.zeros(1, 4, 0, 8))
    steps = [mha(x[:, t : t + 1], cache=cache, head_mask=head_mask)[0] for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)


def test_head_mask_api():
    cfg = preset("tiny", vocab_size=40)
    mask = HeadMask.ones(cfg)
    assert mask.encoder_self.shape == (cfg.n_encoder_layers, cfg.h) and mask.cross.shape == (
        cfg.n_decoder_layers,
        cfg.h,
    )
    off = mask.off("cross", 1, 3)
    assert off.cross[1, 3] == 0 and int(off.cross.eq(0).sum()) == 1
    assert mask.cross.eq(1).all()  # the original is untouched
    assert off.layer("cross", 1).tolist() == [1.0, 1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="family"):
        mask.off("decoder", 0, 0)
