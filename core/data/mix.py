"""Mixing corpora of very different sizes: how many examples of each an epoch draws, and which.

With n_i examples in corpus i (N in all), weight w_i and temperature T, corpus i's share of an epoch
is proportional to w_i · (n_i / N)^(1/T): T = 1 keeps the corpora's own proportions, larger T moves
toward equal shares (Arivazhagan et al. 2019, "Massively Multilingual NMT in the Wild", §4.2), so
170 k short Tatoeba pairs and 18 k news pairs are not drowned by 2 M parliament pairs. An epoch
stays N examples long. A corpus drawn less than its size is read a different slice each epoch
(its own seeded order, read cyclically, so every example comes round before any comes twice); one
drawn more is repeated whole and topped up the same way. Everything depends on (seed, epoch) only,
which keeps --resume exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.errors import ConfigError


def mix_shares(sizes: Sequence[int], weights: Sequence[float] | None = None, temperature: float = 1.0) -> list[float]:
    """Each corpus's share of an epoch (they sum to 1)."""
    if temperature <= 0:
        raise ConfigError(f"--mix-temperature {temperature}: give a positive number (1 = the corpora's own sizes)")
    weights = list(weights) if weights else [1.0] * len(sizes)
    if len(weights) != len(sizes):
        raise ConfigError(f"--data-weight given {len(weights)} times for {len(sizes)} corpora; give one per --data")
    if any(w < 0 for w in weights) or not any(w > 0 for w, n in zip(weights, sizes) if n):
        raise ConfigError("--data-weight: give weights ≥ 0, at least one > 0 for a corpus that holds examples")
    total = sum(sizes)
    raw = [w * (n / total) ** (1.0 / temperature) if n else 0.0 for w, n in zip(weights, sizes)]
    return [r / sum(raw) for r in raw]


def mix_counts(sizes: Sequence[int], weights: Sequence[float] | None = None, temperature: float = 1.0) -> list[int]:
    """Examples drawn from each corpus per epoch: round(share · N), the rounding error given to the largest."""
    shares = mix_shares(sizes, weights, temperature)
    total = sum(sizes)
    counts = [round(s * total) for s in shares]
    counts[int(np.argmax(shares))] += total - sum(counts)
    return counts


def is_identity(sizes: Sequence[int], weights: Sequence[float] | None, temperature: float) -> bool:
    """True when mixing changes nothing: every corpus drawn exactly once per epoch, in place."""
    return temperature == 1.0 and (not weights or len(set(weights)) == 1)


def epoch_indices(sizes: Sequence[int], counts: Sequence[int], *, seed: int, epoch: int) -> np.ndarray:
    """The global example indices (corpus i's examples start at sum(sizes[:i])) that epoch `epoch` trains on."""
    out, start = [], 0
    for i, (n, m) in enumerate(zip(sizes, counts)):
        if n and m:
            # The corpus's own fixed order; epoch e reads positions [e·m, (e+1)·m) of it, round and round.
            order = np.random.default_rng([seed, i, 7919]).permutation(n)
            positions = (np.arange(m, dtype=np.int64) + epoch * m) % n
            out.append(start + order[positions])
        start += n
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
