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


@pytest.mark.parametrize("n_sequences", [1, 200])
def test_a_spread_of_a_few_ulps_of_large_values_is_measured_exactly(n_sequences):
    """Values near -1e12 that differ by about 1e-3 (8 ulps): rounded means would count their errors as spread."""
    from fractions import Fraction

    rng = np.random.default_rng(5)
    sequence = np.repeat(np.arange(n_sequences), 10_000 // n_sequences)
    values = -1e12 + rng.normal(0.0, 1.0, sequence.size) * 1e-3
    bounds = [0, n_sequences // 2, n_sequences] if n_sequences > 1 else [0, 1]
    parts = []
    for first, end in zip(bounds, bounds[1:]):
        inside = (sequence >= first) & (sequence < end)
        parts.append(group_nodes(values[inside], sequence[inside] - first, first, end - first, shift=values[0]))
    moments = tree_moments(parts, shift=values[0])
    exact = [Fraction(v) for v in values.tolist()]
    mean = sum(exact) / len(exact)
    m2 = sum((v - mean) ** 2 for v in exact)
    assert moments.m2 == pytest.approx(float(m2), rel=1e-9)
    assert moments.mean == pytest.approx(float(mean), abs=2**-13)  # within an ulp of 1e12
