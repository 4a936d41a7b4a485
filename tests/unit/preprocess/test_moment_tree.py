"""Moments summed over a fixed tree of sequences: the same bits however the sequences are grouped."""

from __future__ import annotations

import numpy as np
import pytest

from sequifier.preprocess.moment_tree import group_nodes, tree_moments


def moments_in_groups(values: np.ndarray, sequence: np.ndarray, n_sequences: int, cuts: list[int]):
    """The tree's moments when the sequences are cut into groups at `cuts` (sequence indices)."""
    bounds = [0, *cuts, n_sequences]
    parts = []
    for first, end in zip(bounds, bounds[1:]):
        inside = (sequence >= first) & (sequence < end)
        parts.append(group_nodes(values[inside], sequence[inside] - first, first, end - first))
    return tree_moments(parts)


@pytest.mark.parametrize("n_sequences", [1, 2, 7, 64, 100])
def test_any_grouping_gives_the_same_bits_and_the_mean_and_variance_of_the_values(n_sequences):
    rng = np.random.default_rng(n_sequences)
    lengths = rng.integers(0, 40, n_sequences)  # a sequence without fitting values is a leaf of count 0
    sequence = np.repeat(np.arange(n_sequences), lengths)
    values = rng.normal(1e3, 7.0, sequence.size) * rng.choice([1e-3, 1.0, 1e4], sequence.size)
    whole = moments_in_groups(values, sequence, n_sequences, [])
    for _ in range(6):
        cuts = sorted(set(rng.integers(1, n_sequences, rng.integers(0, 6)).tolist())) if n_sequences > 1 else []
        grouped = moments_in_groups(values, sequence, n_sequences, cuts)
        assert (grouped.count, grouped.mean, grouped.m2) == (whole.count, whole.mean, whole.m2), cuts
        assert (grouped.low, grouped.high) == (whole.low, whole.high)
    if values.size:
        assert whole.count == values.size
        assert whole.mean == pytest.approx(values.mean(), rel=1e-12)
        assert whole.m2 == pytest.approx(((values - values.mean()) ** 2).sum(), rel=1e-9)


def test_no_values_are_moments_of_nothing():
    empty = moments_in_groups(np.zeros(0), np.zeros(0, np.int64), 3, [1])
    assert (empty.count, empty.mean, empty.m2) == (0, 0.0, 0.0)
