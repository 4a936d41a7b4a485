"""Split assignment of rows: within_sequence (item ranges), between_sequence (whole sequences), value_cutoff (a column's value)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.config.errors import UserError
from sequifier.data.preprocess.groups import SortedGroup


@dataclass(frozen=True)
class SplitPolicy:
    """How rows are assigned to the n_splits splits."""

    method: str
    ratios: tuple[float, ...]
    split_column: Optional[str] = None
    cutoffs: tuple[Any, ...] = ()  # value_cutoff: floats for numeric columns, else Arrow scalars
    sequence_ids: Optional[np.ndarray] = None  # between_sequence: every sequence id, sorted
    sequence_splits: Optional[np.ndarray] = None  # between_sequence: the split of each of them

    @property
    def n_splits(self) -> int:
        return len(self.ratios)


def split_bounds(lengths: np.ndarray, split_ratios: tuple[float, ...]) -> np.ndarray:
    """[n_sequences, n_splits + 1] local item indices; split k holds items [b[k], b[k+1]).

    Inner boundaries are floor(length * cumulative ratio), as in sequifier 3.x.
    """
    cumulative = np.cumsum(np.asarray(split_ratios, dtype=np.float64))[:-1]
    inner = np.floor(lengths[:, None] * cumulative[None, :]).astype(np.int64)
    inner = np.minimum(inner, lengths[:, None])
    zeros = np.zeros((lengths.shape[0], 1), dtype=np.int64)
    return np.concatenate([zeros, inner, lengths[:, None]], axis=1)


def sequence_splits(n_sequences: int, ratios: tuple[float, ...], seed: int) -> np.ndarray:
    """between_sequence: a seeded permutation of the sorted sequences; the first floor(n * cumulative ratio) go to split 0, etc."""
    order = np.random.default_rng(seed).permutation(n_sequences)
    cuts = np.floor(n_sequences * np.cumsum(np.asarray(ratios, dtype=np.float64))[:-1]).astype(np.int64)
    splits = np.empty(n_sequences, dtype=np.int64)
    splits[order] = np.searchsorted(cuts, np.arange(n_sequences), side="right")
    return splits


def cutoff_values(split_values: tuple[Any, ...], column: str, arrow_type: pa.DataType) -> tuple[Any, ...]:
    """value_cutoff cutoffs as comparable values for the split column's type; UserError naming split_values if they are not."""
    numeric = pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
    if numeric:
        if any(isinstance(v, str) for v in split_values):
            raise UserError("split_values", f"split_column {column!r} is numeric ({arrow_type}); give numbers")
        return tuple(float(v) for v in split_values)
    try:
        return tuple(pa.scalar(v).cast(arrow_type) for v in split_values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise UserError("split_values", f"cannot compare with split_column {column!r} of type {arrow_type} ({error})") from None


def row_splits(policy: SplitPolicy, group: SortedGroup) -> np.ndarray:
    """Split index of every row of the sorted group."""
    if policy.method == "within_sequence":
        bounds = split_bounds(group.lengths, policy.ratios)
        sequence_of_row = np.repeat(np.arange(group.lengths.shape[0]), group.lengths)
        local = np.arange(group.sequence_ids.shape[0], dtype=np.int64) - group.starts[sequence_of_row]
        return (local[:, None] >= bounds[sequence_of_row, 1:-1]).sum(axis=1).astype(np.int64)
    if policy.method == "between_sequence":
        index = np.searchsorted(policy.sequence_ids, group.sequence_ids[group.starts])
        return np.repeat(policy.sequence_splits[index], group.lengths)
    column = group.table.column(policy.split_column)
    if all(isinstance(c, float) for c in policy.cutoffs):
        values = pc.cast(column, pa.float64()).to_numpy()
        return np.searchsorted(np.asarray(policy.cutoffs), values, side="right").astype(np.int64)
    at_or_above = [pc.greater_equal(column, cutoff).to_numpy(zero_copy_only=False) for cutoff in policy.cutoffs]
    return np.sum(at_or_above, axis=0).astype(np.int64)
