"""core.model.masks: bool masks, True where a query may attend, broadcasting against (B, h, T_q, T_k)."""

from __future__ import annotations

import torch

from core.model.masks import combine, decoder_mask, padding_mask, subsequent_mask


def test_padding_mask_hides_pad_keys_only():
    tokens = torch.tensor([[5, 6, 0, 0], [7, 0, 0, 0]])
    mask = padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 1, 4)
    assert mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, False, False], [True, False, False, False]]


def test_padding_mask_uses_the_given_pad_id():
    tokens = torch.tensor([[0, 9, 9]])
    assert padding_mask(tokens, pad_id=9).flatten().tolist() == [True, False, False]


def test_subsequent_mask_is_lower_triangular():
    mask = subsequent_mask(4)
    assert mask.shape == (1, 1, 4, 4)
    assert torch.equal(mask[0, 0], torch.tril(torch.ones(4, 4, dtype=torch.bool)))


def test_subsequent_mask_with_offset_sees_the_whole_cache():
    # Two new queries at positions 3 and 4, after 3 cached positions.
    mask = subsequent_mask(2, offset=3)
    assert mask.shape == (1, 1, 2, 5)
    assert mask[0, 0].int().tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    # It is exactly the last rows of the full mask.
    assert torch.equal(mask, subsequent_mask(5)[:, :, 3:])


def test_subsequent_mask_single_query_sees_everything_cached():
    assert subsequent_mask(1, offset=6).all()


def test_combine_ignores_none_and_broadcasts():
    assert combine() is None
    assert combine(None, None) is None
    pad = padding_mask(torch.tensor([[1, 2, 0]]), 0)
    assert combine(None, pad) is pad
    both = combine(pad, None, subsequent_mask(3))
    assert both.shape == (1, 1, 3, 3)
    assert both[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 0]]


def test_decoder_mask_is_padding_and_look_ahead_per_sentence():
    tgt = torch.tensor([[2, 5, 6], [2, 7, 0]])
    mask = decoder_mask(tgt, pad_id=0)
    assert mask.shape == (2, 1, 3, 3)
    assert mask[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert mask[1, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 0]]
    # No query row is ever empty (BOS comes first), so no softmax row is all -inf.
    assert mask.any(-1).all()
