"""The course notes' worked examples (/work/shared/seeds), reproduced with the core's own functions.

Each test quotes the seed's numbers and names its file. Where the seed's arithmetic is wrong, the
test asserts the correct value and a comment says what the seed got wrong, so nobody "fixes" the
code to match the notes.

    000 = /work/shared/seeds/000_a71c832539667895.txt  (hand-written course notes)
    001 = /work/shared/seeds/001_b1bc18e181a0528d.txt  (long study guide)
"""

from __future__ import annotations

import math

import pytest
import torch

from core.model.attention import MultiHeadAttention, scaled_dot_product_attention
from core.model.layers import AddNorm, sinusoidal_table
from core.model.masks import combine, decoder_mask, padding_mask, subsequent_mask

# ------------------------------------------------------------------------------ positional encoding


def test_pe_rows_d_model_4_seed_000():
    """000 "For our example d_model = 4": PE(0) = [0, 1, 0, 1]; PE(1,0) = sin(1) = 0.8415,
    PE(1,1) ≈ 0.5403, PE(1,2) ≈ 0.01, PE(1,3) ≈ 0.99995."""
    table = sinusoidal_table(2, 4)
    assert table[0].tolist() == [0.0, 1.0, 0.0, 1.0]
    torch.testing.assert_close(table[1], torch.tensor([0.8415, 0.5403, 0.01, 0.99995]), atol=5e-5, rtol=0)
    # The seed's boxed vector for "CAT" (position 1) reads [0.84 | 0.54 | 0.01 | 0.39]: the 0.39 is a
    # slip for the 0.99995 it computed two lines above.
    assert table[1, 3] > 0.999
    # The seed also writes the cosine's exponent as (2i+1)/d_model; the paper (and the seed's own
    # formula at the top) uses 2i/d_model for both members of a pair: cos(1/10000^(2/4)) = cos(0.01).
    assert table[1, 3].item() == pytest.approx(math.cos(0.01), abs=1e-7)
    assert table[1, 3].item() != pytest.approx(math.cos(1 / 10000 ** (3 / 4)), abs=1e-6)


def test_pe_input_is_embedding_plus_position_seed_000():
    """000: "The" [0.1 0.2 0.3 0.4] + PE(0) [0 1 0 1]; "CAT" [0.5 0.6 0.7 0.8] + PE(1)."""
    from core.model.layers import PositionalEncoding

    pe = PositionalEncoding(4, max_len=8, dropout=0.0)
    words = torch.tensor([[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]]])  # (1, 2, 4)
    out = pe(words)
    torch.testing.assert_close(out[0, 0], torch.tensor([0.1, 1.2, 0.3, 1.4]))
    cat = torch.tensor([0.5 + 0.8415, 0.6 + 0.5403, 0.7 + 0.01, 0.8 + 0.99995])
    torch.testing.assert_close(out[0, 1], cat, atol=5e-5, rtol=0)


def test_pe_rows_d_model_6_seed_001():
    """001 "Bank (pos=1)": [0.84, 0.54, 0.04, 0.99, 0.00, 0.99]; "River (pos=0)": [0, 1, 0, 1, 0, 1]."""
    table = sinusoidal_table(2, 6)
    assert table[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    exact = [
        math.sin(1),
        math.cos(1),
        math.sin(10000 ** (-1 / 3)),
        math.cos(10000 ** (-1 / 3)),
        math.sin(10000 ** (-2 / 3)),
        math.cos(10000 ** (-2 / 3)),
    ]
    torch.testing.assert_close(table[1], torch.tensor(exact), atol=1e-6, rtol=0)
    # The seed truncates to two decimals rather than rounding: 0.0464 is shown as 0.04 and
    # 0.999998 as 0.99. Truncation reproduces every one of its numbers.
    assert [math.floor(v * 100) / 100 for v in table[1].tolist()] == [0.84, 0.54, 0.04, 0.99, 0.00, 0.99]


def test_pe_frequencies_d_model_6_seed_001():
    """001's frequency table for d_model = 6 says 1/10000^(1/3) = 0.01 and 1/10000^(2/3) = 0.0001.

    Both are wrong: 10000^(1/3) ≈ 21.54, so the frequencies are 0.0464 and 0.00215 (the seed's
    values are those of d_model = 4). Column 2i of row `pos` is sin(pos · ω_i); read ω_i back.
    """
    table = sinusoidal_table(3, 6).double()
    omega = torch.asin(table[1, 0::2])  # row pos=1: sin(ω_i)
    expected = torch.tensor([1.0, 0.0464159, 0.00215443], dtype=torch.float64)
    torch.testing.assert_close(omega, expected, atol=1e-6, rtol=0)
    assert abs(omega[1].item() - 0.01) > 0.03


def test_pe_relative_position_is_linear_seed_001():
    """001: "PE(pos+k) can be expressed as a linear function of PE(pos)": each (sin, cos) pair is rotated
    by the angle k·ω_i, whatever pos is."""
    d_model, k = 8, 3
    table = sinusoidal_table(20, d_model).double()
    omega = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    for pos in (0, 5, 11):
        sin, cos = table[pos, 0::2], table[pos, 1::2]
        rot_sin = sin * torch.cos(k * omega) + cos * torch.sin(k * omega)
        rot_cos = cos * torch.cos(k * omega) - sin * torch.sin(k * omega)
        torch.testing.assert_close(rot_sin, table[pos + k, 0::2], atol=1e-6, rtol=0)
        torch.testing.assert_close(rot_cos, table[pos + k, 1::2], atol=1e-6, rtol=0)


# ------------------------------------------------------------------------------ layer normalisation


def test_layer_norm_cat_example_seed_000():
    """000: "CAT" = [2.0, 4.0, 6.0, 8.0], γ = 1, β = 0, ε = 1e-5: μ = 5.0, σ² = 5.0,
    x̂ = [-1.34, -0.45, 0.45, 1.34], through the model's own Add & Norm.

    Post-norm (the paper) is LayerNorm(x + Sublayer(x)), so a residual of [1, 2, 3, 4] plus a
    sub-layer output of [1, 2, 3, 4] normalises [2, 4, 6, 8].
    """
    x = torch.tensor([[2.0, 4.0, 6.0, 8.0]])
    seed = torch.tensor([[-1.34, -0.45, 0.45, 1.34]])
    exact = (x - 5.0) / math.sqrt(5.0 + 1e-5)  # the seed's steps i–iii, unrounded
    half = x / 2
    # Dropout on the sub-layer's output is off in eval mode, so it may not change the seed's numbers.
    add_norm = AddNorm(4, dropout=0.5, norm="post").eval()
    assert add_norm.norm.weight.tolist() == [1.0] * 4 and add_norm.norm.bias.tolist() == [0.0] * 4  # the seed's γ, β
    torch.testing.assert_close(add_norm(half, half), exact, atol=1e-6, rtol=0)
    torch.testing.assert_close(add_norm(half, half), seed, atol=5e-3, rtol=0)  # the seed rounds to 2 places
    assert add_norm(x, torch.zeros_like(x)).tolist() == add_norm(half, half).tolist()  # only the sum counts
    # Step 4, scale and shift: y = γ·x̂ + β with the learned γ and β of the layer.
    with torch.no_grad():
        add_norm.norm.weight.fill_(2.0)
        add_norm.norm.bias.fill_(1.0)
    torch.testing.assert_close(add_norm(half, half), 2 * exact + 1, atol=1e-6, rtol=0)
    # Pre-norm normalises the sub-layer's input instead and leaves the sum un-normalised.
    pre = AddNorm(4, dropout=0.0, norm="pre")
    torch.testing.assert_close(pre.sublayer_input(x), exact, atol=1e-6, rtol=0)
    torch.testing.assert_close(pre(half, half), x)


def test_layer_norm_seed_001_uses_the_wrong_variance():
    """001's "Layer Norm" example normalises 7 in [7, 5, 4] and gets 1.118.

    That is wrong for layer normalisation: the seed divides by N-1 (unbiased variance, 2.335) and
    rounds μ to 5.3. LayerNorm uses the biased variance, σ² = 4.667/3 = 1.556, so x̂ = 1.3363.
    Checked through the model's Add & Norm: residual [7, 5, 4] plus a zero sub-layer output.
    """
    x = torch.tensor([[7.0, 5.0, 4.0]])
    out = AddNorm(3, dropout=0.0, norm="post")(x, torch.zeros_like(x))
    assert out[0, 0].item() == pytest.approx((7 - 16 / 3) / math.sqrt(14 / 9 + 1e-5), abs=1e-5)
    assert out[0, 0].item() == pytest.approx(1.3363, abs=1e-4)
    unbiased = (7 - 16 / 3) / math.sqrt(14 / 6)  # N-1, the seed's variance: 1.091 (its 1.118 also rounds μ)
    assert abs(out[0, 0].item() - unbiased) > 0.2 and abs(out[0, 0].item() - 1.118) > 0.2


# ------------------------------------------------------------------------------ attention


# 000, "Eg: The Cat Sat": E_The = [1 0 1 0], E_CAT = [0 1 0 1], E_SAT = [1 1 1 1], W_Q = W_K = W_V = I.
THE_CAT_SAT = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
# The seed's attention weights (rows: The, CAT, SAT).
SEED_WEIGHTS = torch.tensor([[0.4223, 0.1554, 0.4223], [0.1554, 0.4223, 0.4223], [0.2119, 0.2119, 0.5762]])


def test_identity_projection_attention_seed_000():
    """000: scores The·[The, CAT, SAT] = [2, 0, 2], CAT· = [0, 2, 2], SAT· = [2, 2, 4]; scaled by √d_k = 2;
    weights as SEED_WEIGHTS."""
    x = THE_CAT_SAT
    scores = x @ x.T
    assert scores.tolist() == [[2.0, 0.0, 2.0], [0.0, 2.0, 2.0], [2.0, 2.0, 4.0]]
    out, weights, _ = scaled_dot_product_attention(x, x, x)
    torch.testing.assert_close(weights, SEED_WEIGHTS, atol=1e-4, rtol=0)
    # The seed labels the CAT and SAT rows "Softmax([0, 2, 2])" and "Softmax([2, 2, 4])", but its
    # numbers are the softmax of the *scaled* scores [0, 1, 1] and [1, 1, 2] — which is what Eq. 1
    # computes. softmax([0, 2, 2]) would be [0.063, 0.468, 0.468].
    assert weights[1, 0].item() != pytest.approx(0.0634, abs=1e-3)
    # Output(The) = 0.4223·V_The + 0.1554·V_CAT + 0.4223·V_SAT = [0.8446, 0.5777, 0.8446, 0.5777].
    # The seed writes [1.2669, 0.9999, 1.2669, 0.9999]: it added 0.4223 three times in the
    # first and third components (V_CAT is 0 there) and likewise miscounted the others.
    torch.testing.assert_close(out[0], torch.tensor([0.8446, 0.5777, 0.8446, 0.5777]), atol=1e-4, rtol=0)
    assert abs(out[0, 0].item() - 1.2669) > 0.4


def test_identity_projection_through_multi_head_attention_seed_000():
    """The same example through the model's MultiHeadAttention: h = 1, every projection the identity,
    no bias. The fused path and the weights path both reproduce the seed."""
    mha = MultiHeadAttention(d_model=4, h=1)
    with torch.no_grad():
        eye = torch.eye(4)
        mha.w_q.weight.copy_(eye)
        mha.w_kv.weight.copy_(torch.cat([eye, eye]))  # W^K stacked over W^V
        mha.w_o.weight.copy_(eye)
        for layer in (mha.w_q, mha.w_kv, mha.w_o):
            layer.bias.zero_()
    x = THE_CAT_SAT[None]  # (1, 3, 4)
    fused, none = mha(x)
    manual, internals = mha(x, need_weights=True)
    assert none is None
    torch.testing.assert_close(internals.weights[0, 0], SEED_WEIGHTS, atol=1e-4, rtol=0)
    torch.testing.assert_close(fused, manual, atol=1e-6, rtol=0)
    torch.testing.assert_close(fused[0, 0], torch.tensor([0.8446, 0.5777, 0.8446, 0.5777]), atol=1e-4, rtol=0)


def test_scaling_example_seed_000():
    """000 "Q = [2 3 4 1], K_1 = [1 0 1 0], K_2 = [0 1 0 1]": scores [6, 4]; unscaled softmax ≈ [0.88, 0.12];
    scaled "[6/√2, 4/√2] = [3, 2]" → [0.73, 0.27].

    The seed writes √2 but means √d_k = √4 = 2 (6/√2 would be 4.24); [3, 2] is right for d_k = 4.
    """
    q = torch.tensor([[2.0, 3.0, 4.0, 1.0]])
    k = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
    assert (q @ k.T).tolist() == [[6.0, 4.0]]
    torch.testing.assert_close((q @ k.T).softmax(-1), torch.tensor([[0.88, 0.12]]), atol=5e-3, rtol=0)
    _, weights, _ = scaled_dot_product_attention(q, k, k)
    torch.testing.assert_close(weights, torch.tensor([[0.73, 0.27]]), atol=5e-3, rtol=0)


# ------------------------------------------------------------------------------ masks


def test_padding_and_look_ahead_masks_seed_000():
    """000: sequence [4, 5, 0] (0 = padding) → 1-D mask [1, 1, 0]; 2-D padding mask
    [[1,1,0],[1,1,0],[0,0,0]]; look-ahead [[1,0,0],[1,1,0],[1,1,1]]; combined [[1,0,0],[1,1,0],[0,0,0]]."""
    tokens = torch.tensor([[4, 5, 0]])
    keys = padding_mask(tokens, pad_id=0)  # (1, 1, 1, 3)
    assert keys.flatten().tolist() == [True, True, False]
    queries = keys.transpose(-1, -2)  # (1, 1, 3, 1): the seed also blanks the padded query's row
    assert combine(queries, keys)[0, 0].int().tolist() == [[1, 1, 0], [1, 1, 0], [0, 0, 0]]
    assert subsequent_mask(3)[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert combine(queries, keys, subsequent_mask(3))[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [0, 0, 0]]
    # tt's decoder mask hides padded *keys* only: a padded query keeps its row open (its output is
    # never used — the loss skips it), because a row with nothing to attend to is NaN in the fused kernel.
    assert decoder_mask(tokens, pad_id=0)[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 0]]


# 000 "④ MASK": scores for a 4-token target whose last token is padding.
SEED_SCORES = torch.tensor([[0.3, 0.7, 1.1, 0.0], [0.7, 1.9, 3.1, 0.0], [1.1, 3.1, 5.1, 0.0], [0.0, 0.0, 0.0, 0.0]])


def test_combined_mask_and_masked_softmax_seed_000():
    """000: combined mask [[1,0,0,0],[1,1,0,0],[1,1,1,0],[1,1,1,0]]; masked scores
    [[0.3,-∞,-∞,-∞],[0.7,1.9,-∞,-∞],[1.1,3.1,5.1,-∞],[0,0,0,-∞]]; the seed's softmax:
    [[1,0,0,0],[0.3,0.7,0,0],[0.1,0.3,0.6,0],[1,0,0,0]]."""
    tokens = torch.tensor([[7, 8, 9, 0]])  # three real tokens, then padding
    mask = decoder_mask(tokens, pad_id=0)  # (1, 1, 4, 4)
    assert mask[0, 0].int().tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]]
    # Choose q, k so that q·kᵀ/√d_k is exactly the seed's score matrix: k = I, q = 2·scores (d_k = 4);
    # v = I makes the attention output equal to the weights.
    eye = torch.eye(4)
    out, weights, _ = scaled_dot_product_attention(2 * SEED_SCORES, eye, eye, mask[0, 0])
    torch.testing.assert_close(out, weights)
    # The seed's softmax rows 2–4 are wrong. softmax([0.7, 1.9]) = [0.2315, 0.7685], not [0.3, 0.7];
    # softmax([1.1, 3.1, 5.1]) = [0.0159, 0.1173, 0.8668], not [0.1, 0.3, 0.6]; and the fourth row,
    # three equal scores of 0, gets a third each, not [1, 0, 0, 0].
    correct = torch.tensor(
        [[1.0, 0.0, 0.0, 0.0], [0.2315, 0.7685, 0.0, 0.0], [0.0159, 0.1173, 0.8668, 0.0], [1 / 3, 1 / 3, 1 / 3, 0.0]]
    )
    torch.testing.assert_close(weights, correct, atol=1e-4, rtol=0)
    assert weights[:, 3].eq(0).all()  # the padded key gets exactly zero weight from every query
    torch.testing.assert_close(weights.sum(-1), torch.ones(4))
