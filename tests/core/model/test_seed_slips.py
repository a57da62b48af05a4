"""Worked examples of the notes that test_seeds.py did not cover, reproduced with tt's own code.

    001 = /work/shared/seeds/001_b1bc18e181a0528d.txt  (long study guide)

Where the note's number is wrong the test asserts the right one and says what slipped.
"""

from __future__ import annotations

import math

import pytest
import torch

from core.model.attention import scaled_dot_product_attention
from core.train.trainer import noam_lr


def test_money_bank_geometry_seed_001():
    """001 "money, bank": s21 = q_bank·k_money = 10, s22 = q_bank·k_bank = 32, d_k = 2.

    The note writes 10/√2 ≈ 7.09 and 32/√2 ≈ 22.69 (they are 7.07 and 22.63), then softmax weights
    [0.2, 0.8]. Scores 15.6 apart give a softmax of ≈ [0, 1]: money gets 1.7e-7 of bank's attention.
    [0.2, 0.8] would need the scaled scores only ln 4 = 1.39 apart.
    """
    q_bank = torch.tensor([[2.0, 2.0]])
    k = torch.tensor([[2.0, 3.0], [8.0, 8.0]])  # k_money, k_bank: any keys with these dot products will do
    v = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # v_money points up, v_bank to the side, as drawn
    assert (q_bank @ k.T).tolist() == [[10.0, 32.0]]
    out, weights, scores = scaled_dot_product_attention(q_bank, k, v)
    torch.testing.assert_close(scores, torch.tensor([[10 / math.sqrt(2), 32 / math.sqrt(2)]]))
    assert scores[0].tolist() == pytest.approx([7.07, 22.63], abs=5e-3)
    assert abs(scores[0, 0].item() - 7.09) > 0.015 and abs(scores[0, 1].item() - 22.69) > 0.05
    assert weights[0, 0].item() == pytest.approx(1.7e-7, rel=0.05)
    assert weights[0, 1].item() > 0.9999
    assert abs(weights[0, 0].item() - 0.2) > 0.19  # not the note's 0.2
    torch.testing.assert_close(out, v[1:], atol=1e-6, rtol=0)  # y_bank ≈ v_bank, no visible pull toward money
    gap = torch.tensor([[0.0, math.log(4)]]).softmax(-1)
    torch.testing.assert_close(gap, torch.tensor([[0.2, 0.8]]))


def test_peak_learning_rate_seed_001():
    """001: "Peak LR at step 4,000 ≈ 0.000707 for base model (d_model = 512)".

    lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) at step = warmup = 4000 is
    512^-0.5 · 4000^-0.5 = 0.0441942 · 0.0158114 = 0.000699. The note's 0.000707 is what one gets
    after rounding 4000^-0.5 up to 0.016.
    """
    peak = noam_lr(4000, 512, 4000)
    assert peak == pytest.approx(0.000699, abs=5e-7)
    assert abs(peak - 0.000707) > 5e-6
    assert 512**-0.5 * 0.016 == pytest.approx(0.000707, abs=5e-7)
    # It is the peak: the schedule rises linearly before and decays as step^-0.5 after.
    assert noam_lr(3999, 512, 4000) < peak and noam_lr(4001, 512, 4000) < peak
    assert noam_lr(2000, 512, 4000) == pytest.approx(peak / 2)
    assert noam_lr(16000, 512, 4000) == pytest.approx(peak / 2)
