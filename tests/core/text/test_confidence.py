"""Confidence signals: exact values on hand-made inputs."""

from __future__ import annotations

import math

import pytest

from core.text.confidence import confidence, sentence_confidence, source_coverage, word_confidences


def test_sentence_confidence_is_the_geometric_mean_probability():
    assert sentence_confidence([math.log(0.5), math.log(0.125)]) == pytest.approx(0.25)
    assert sentence_confidence([]) == 1.0


def test_coverage_is_high_when_every_source_piece_is_read_and_low_when_attention_sits_on_eos():
    reads_all = [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.0, 0.1, 0.9]]  # 2 source pieces + EOS
    on_eos = [[0.05, 0.0, 0.95], [0.0, 0.05, 0.95], [0.0, 0.0, 1.0]]
    assert source_coverage(reads_all) == pytest.approx((0.95 + 1.0) / 2)
    assert source_coverage(on_eos) == pytest.approx(0.05)
    assert source_coverage(on_eos, source_has_eos=False) == pytest.approx((0.05 + 0.05 + 1.0) / 3)


def test_word_confidences_join_pieces_at_word_starts():
    pieces = ["▁The", "▁cat", "s", "."]
    lps = [math.log(0.9), math.log(0.5), math.log(0.5), math.log(1.0)]
    words = word_confidences(pieces, lps)
    assert [w for w, _ in words] == ["The", "cats."]
    assert words[0][1] == pytest.approx(0.9)
    assert words[1][1] == pytest.approx(math.exp((2 * math.log(0.5)) / 3))


def test_confidence_without_attention_has_no_coverage():
    c = confidence(["▁Hi"], [math.log(0.5)])
    assert c.coverage is None and c.to_dict()["confidence"] == 0.5
