"""Within-sequence splits: per sequence, item boundaries of each split from the split ratios."""

from __future__ import annotations

import numpy as np


def sequence_layout(sequence_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start row and length of each sequence in rows sorted by sequenceId."""
    is_start = np.ones(sequence_ids.shape[0], dtype=bool)
    is_start[1:] = sequence_ids[1:] != sequence_ids[:-1]
    starts = np.flatnonzero(is_start)
    lengths = np.diff(np.append(starts, sequence_ids.shape[0]))
    return starts.astype(np.int64), lengths.astype(np.int64)


def split_bounds(lengths: np.ndarray, split_ratios: list[float]) -> np.ndarray:
    """[n_sequences, n_splits + 1] local item indices; split k holds items [b[k], b[k+1]).

    Inner boundaries are floor(length * cumulative ratio), as in sequifier 3.x.
    """
    cumulative = np.cumsum(np.asarray(split_ratios, dtype=np.float64))[:-1]
    inner = np.floor(lengths[:, None] * cumulative[None, :]).astype(np.int64)
    inner = np.minimum(inner, lengths[:, None])
    zeros = np.zeros((lengths.shape[0], 1), dtype=np.int64)
    return np.concatenate([zeros, inner, lengths[:, None]], axis=1)


def item_split_index(starts: np.ndarray, lengths: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Split index of every row (rows sorted by sequence)."""
    sequence_of_row = np.repeat(np.arange(lengths.shape[0]), lengths)
    local = np.arange(int(lengths.sum()), dtype=np.int64) - starts[sequence_of_row]
    inner = bounds[sequence_of_row, 1:-1]
    return (local[:, None] >= inner).sum(axis=1).astype(np.int64)
