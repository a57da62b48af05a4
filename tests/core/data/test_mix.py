"""Corpus mixing (core/data/mix.py): shares, counts, and which examples each epoch draws."""

import numpy as np
import pytest

from core.data.mix import epoch_indices, is_identity, mix_counts, mix_shares
from core.errors import ConfigError

SIZES = [2_000_000, 170_000, 18_000]


def test_temperature_one_keeps_proportions_and_larger_evens_them_out():
    own = mix_shares(SIZES, temperature=1.0)
    assert own == pytest.approx([n / sum(SIZES) for n in SIZES])
    warm, hot = mix_shares(SIZES, temperature=3.0), mix_shares(SIZES, temperature=100.0)
    assert sum(warm) == pytest.approx(1.0)
    assert own[2] < warm[2] < hot[2] and hot == pytest.approx([1 / 3] * 3, abs=0.02)


def test_weights_multiply_the_shares():
    plain, weighted = mix_shares(SIZES[1:], temperature=1.0), mix_shares(SIZES[1:], [1.0, 4.0], 1.0)
    assert weighted[1] / weighted[0] == pytest.approx(4 * plain[1] / plain[0])


def test_counts_keep_the_epoch_length():
    counts = mix_counts(SIZES, [1.0, 1.0, 2.0], 2.0)
    assert sum(counts) == sum(SIZES) and counts[2] > SIZES[2]  # the news corpus is drawn several times over


def test_bad_settings_are_one_line_errors():
    with pytest.raises(ConfigError, match="--mix-temperature"):
        mix_shares(SIZES, temperature=0)
    with pytest.raises(ConfigError, match="one per --data"):
        mix_shares(SIZES, [1.0], 1.0)
    with pytest.raises(ConfigError, match="--data-weight"):
        mix_shares(SIZES, [0.0, 0.0, 0.0], 1.0)


def test_identity_only_when_nothing_changes():
    assert is_identity(SIZES, None, 1.0) and is_identity(SIZES, [2.0, 2.0, 2.0], 1.0)
    assert not is_identity(SIZES, [1.0, 2.0, 1.0], 1.0) and not is_identity(SIZES, None, 2.0)


def test_epoch_draws_each_corpus_its_count_from_its_own_range():
    sizes, counts = [50, 10], [30, 30]
    drawn = epoch_indices(sizes, counts, seed=1, epoch=0)
    assert len(drawn) == 60
    assert np.sum(drawn < 50) == 30 and np.all(drawn[30:] >= 50)
    assert np.bincount(drawn[30:] - 50, minlength=10).tolist() == [3] * 10  # upsampled: each 3 times


def test_a_subsampled_corpus_comes_round_whole_before_any_example_repeats():
    sizes, counts = [50], [20]
    seen = np.concatenate([epoch_indices(sizes, counts, seed=3, epoch=e) for e in range(5)])  # 100 draws
    assert sorted(seen[:50].tolist()) == list(range(50)) and sorted(seen[50:].tolist()) == list(range(50))


def test_draws_depend_on_seed_and_epoch_only():
    a = epoch_indices([100, 40], [60, 80], seed=7, epoch=2)
    assert np.array_equal(a, epoch_indices([100, 40], [60, 80], seed=7, epoch=2))
    assert not np.array_equal(a, epoch_indices([100, 40], [60, 80], seed=7, epoch=3))
    assert not np.array_equal(a, epoch_indices([100, 40], [60, 80], seed=8, epoch=2))
