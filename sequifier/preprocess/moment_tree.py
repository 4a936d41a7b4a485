"""Moments of a real column summed over a fixed binary tree of the scan's sequences.

Leaf s holds the moments of sequence s's fitting values; node (level, index) those of sequences
[index * 2**level, (index + 1) * 2**level). A group of sequences computes the nodes that lie wholly inside it
and the main process the rest, every node from its two children by the same arithmetic, so that the
statistics depend on the data alone, not on how its sequences were grouped (`n_cores`, the output form).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sequifier.preprocess.statistics import Moments

Sums = tuple[np.ndarray, np.ndarray, np.ndarray]  # count, mean, sum of squared deviations; aligned arrays


@dataclass(frozen=True)
class TreeNodes:
    """The nodes a group computed (level, index and their sums), with the smallest and largest value."""

    levels: list[int]
    indices: list[int]
    sums: Sums
    low: float
    high: float


def group_nodes(
    values: np.ndarray, sequence: np.ndarray, first_sequence: int, n_sequences: int, shift: float = 0.0
) -> TreeNodes:
    """The nodes wholly inside sequences [first_sequence, first_sequence + n_sequences) of the scan, their means
    those of `values - shift` (a value of the column, the same for every group, so that means and their differences
    keep the digits of the spread when the values are large beside it).

    `sequence` holds each value's sequence, counted from the group's first; values of one sequence are in
    position order.
    """
    low, high = (float(values.min()), float(values.max())) if values.size else (np.inf, -np.inf)
    values = values - shift
    counts = np.bincount(sequence, minlength=n_sequences).astype(np.float64)
    totals = np.bincount(sequence, weights=values, minlength=n_sequences)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        means = np.divide(totals, counts, out=np.zeros(n_sequences), where=counts > 0)
        deviations = values - means[sequence]
        squares = np.bincount(sequence, weights=deviations * deviations, minlength=n_sequences)
        # The rounded sum makes `means` miss the mean by ulps of the values, which the squares would count as
        # spread; the deviations' own sum corrects both (the corrected two-pass algorithm).
        residuals = np.bincount(sequence, weights=deviations, minlength=n_sequences)
        corrections = np.divide(residuals, counts, out=np.zeros(n_sequences), where=counts > 0)
        means = means + corrections
        squares = np.maximum(squares - residuals * corrections, 0.0)
    levels, indices, parts = [], [], []
    start, end = first_sequence, first_sequence + n_sequences
    while start < end:
        level = (start & -start).bit_length() - 1 if start else (end - start).bit_length()
        while start + (1 << level) > end:
            level -= 1
        local = slice(start - first_sequence, start - first_sequence + (1 << level))
        parts.append(_reduced((counts[local], means[local], squares[local])))
        levels.append(level)
        indices.append(start >> level)
        start += 1 << level
    sums = tuple(np.concatenate([part[k] for part in parts]) for k in range(3)) if parts else _empty()
    return TreeNodes(levels, indices, sums, low, high)


def tree_moments(parts: list[TreeNodes], shift: float = 0.0) -> Moments:
    """The moments at the root of the tree the groups' nodes make up (they cover the scan's sequences), of the
    values the groups shifted by `shift`."""
    nodes: dict[tuple[int, int], Sums] = {}
    for part in parts:
        for position, key in enumerate(zip(part.levels, part.indices)):
            nodes[key] = tuple(array[position : position + 1] for array in part.sums)
    level = 0
    while len(nodes) > 1:
        for index in sorted(i for (at, i) in nodes if at == level):
            if (level, index) not in nodes:
                continue  # merged as the right sibling of the node before it
            left = nodes.pop((level, index))
            right = nodes.pop((level, index + 1), None) if index % 2 == 0 else None
            if index % 2:
                raise AssertionError(f"tree node ({level}, {index}) has no left sibling")
            nodes[(level + 1, index // 2)] = left if right is None else _merged(left, right)
        level += 1
    count, mean, squares = next(iter(nodes.values())) if nodes else _empty()
    low = min((part.low for part in parts), default=np.inf)
    high = max((part.high for part in parts), default=-np.inf)
    return Moments(int(count.sum()), float(mean.sum()) + shift, float(squares.sum()), low, high)


def _reduced(leaves: Sums) -> Sums:
    """The sums of a power-of-two run of leaves, merged pairwise level by level."""
    while leaves[0].size > 1:
        leaves = _merged(tuple(a[0::2] for a in leaves), tuple(a[1::2] for a in leaves))
    return leaves


def _merged(left: Sums, right: Sums) -> Sums:
    """Chan et al.'s pairwise update, element by element; an empty side gives the other side unchanged."""
    (c1, m1, q1), (c2, m2, q2) = left, right
    count = c1 + c2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        delta = m2 - m1
        share = np.divide(c2, count, out=np.zeros_like(count), where=count > 0)
        weight = np.divide(c1 * c2, count, out=np.zeros_like(count), where=count > 0)
        mean = np.where(c1 == 0, m2, np.where(c2 == 0, m1, m1 + delta * share))
        squares = np.where(c1 == 0, q2, np.where(c2 == 0, q1, q1 + q2 + delta * delta * weight))
    return count, mean, squares


def _empty() -> Sums:
    return np.zeros(0), np.zeros(0), np.zeros(0)
