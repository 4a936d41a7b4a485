"""Split assignment of rows.

Methods: within_sequence (item ranges), between_sequence (whole sequences), value_cutoff (a column's value).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.config.errors import UserError
from sequifier.preprocess.groups import SortedGroup


@dataclass(frozen=True)
class SplitPolicy:
    """How rows are assigned to the n_splits splits."""

    method: str
    ratios: tuple[float, ...]
    split_column: Optional[str] = None
    cutoffs: tuple[Any, ...] = ()  # value_cutoff: ints for integer columns, floats for others, else Arrow scalars
    sequence_ids: Optional[np.ndarray] = None  # between_sequence: every sequence id, sorted
    sequence_splits: Optional[np.ndarray] = None  # between_sequence: the split of each of them

    @property
    def n_splits(self) -> int:
        return len(self.ratios)


def split_bounds(lengths: np.ndarray, split_ratios: tuple[float, ...]) -> np.ndarray:
    """[n_sequences, n_splits + 1] local item indices; split k holds items [b[k], b[k+1]).

    Every boundary, the last one included, is floor(length * cumulative ratio), the cumulative ratios summed
    in float64 (as sequifier 3.x does). When they sum to just under 1 (0.7 + 0.2 + 0.1 is 0.9999999999999999)
    the last boundary can fall short of the length: such trailing items belong to no split.
    """
    cumulative = np.cumsum(np.asarray(split_ratios, dtype=np.float64))
    bounds = np.floor(lengths[:, None].astype(np.float64) * cumulative[None, :]).astype(np.int64)
    bounds = np.minimum(bounds, lengths[:, None])
    zeros = np.zeros((lengths.shape[0], 1), dtype=np.int64)
    return np.concatenate([zeros, bounds], axis=1)


def sequence_draws(sequence_ids: np.ndarray, seed: int) -> np.ndarray:
    """A number in [0, 1) per sequence: the first 8 bytes of sha256("<seed>:<sequenceId>") (big-endian) / 2**64."""
    prefixes = b"".join(hashlib.sha256(f"{seed}:{i}".encode()).digest()[:8] for i in sequence_ids.tolist())
    return np.frombuffer(prefixes, dtype=">u8").astype(np.float64) / 2.0**64


def sequence_splits(sequence_ids: np.ndarray, ratios: tuple[float, ...], seed: int) -> np.ndarray:
    """between_sequence: the split of each sequence, as sequifier 3.x assigns it.

    A sequence goes to the split whose cumulative-ratio interval holds its draw (a draw equal to a boundary goes
    to the later split). Then each empty split, in index order, takes from the split holding the most sequences
    (ties: the larger ratio, then the lower index) that split's sequence with the highest draw.
    """
    n_splits = len(ratios)
    if sequence_ids.shape[0] < n_splits:
        raise UserError(
            "split_ratios",
            f"between_sequence needs at least as many sequences as splits; found {sequence_ids.shape[0]} sequences "
            f"for {n_splits} splits",
        )
    draws = sequence_draws(sequence_ids, seed)
    cumulative = np.cumsum(np.asarray(ratios, dtype=np.float64))[:-1]
    splits = np.searchsorted(cumulative, draws, side="right").astype(np.int64)
    counts = np.bincount(splits, minlength=n_splits)
    for empty in np.flatnonzero(counts == 0):
        donor = max(range(n_splits), key=lambda split: (counts[split], ratios[split], -split))
        members = np.flatnonzero(splits == donor)
        splits[members[np.argmax(draws[members])]] = empty
        counts[donor] -= 1
        counts[empty] += 1
    return splits


def cutoff_values(split_values: tuple[Any, ...], column: str, arrow_type: pa.DataType) -> tuple[Any, ...]:
    """value_cutoff cutoffs as comparable values for the split column's type.

    Raises a UserError naming split_values if they are not.
    """
    numeric = pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
    if numeric:
        if any(isinstance(v, str) for v in split_values):
            raise UserError("split_values", f"split_column {column!r} is numeric ({arrow_type}); give numbers")
        if pa.types.is_integer(arrow_type):  # compared exactly: int64 values beyond 2**53 have no float of their own
            return tuple(v if isinstance(v, int) else math.ceil(v) for v in split_values)
        return tuple(float(v) for v in split_values)
    textual = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
    numbers = [v for v in split_values if _is_number(v)]
    if textual and numbers:
        raise UserError(
            "split_values",
            f"split_column {column!r} holds text ({arrow_type}), so {numbers[0]!r} would compare as text "
            f"(where '10' < '9'); give text cutoffs, quoted (e.g. '{numbers[0]}') if that is what you mean",
        )
    return tuple(_comparable(v, column, arrow_type) for v in split_values)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _comparable(value: Any, column: str, arrow_type: pa.DataType) -> pa.Scalar:
    try:
        if pa.types.is_decimal(arrow_type) and _is_number(value):
            if not math.isfinite(value):
                raise UserError("split_values", f"split_column {column!r} holds decimals, which are finite: {value}")
            return pa.scalar(Decimal(str(value)))  # exact, at the number's own precision and scale
        return pa.scalar(value).cast(arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        if pa.types.is_timestamp(arrow_type) and arrow_type.tz and "zone offset" in str(error):
            raise UserError(
                "split_values",
                f"split_column {column!r} holds times of a time zone ({arrow_type}), so {value!r} needs its offset "
                "from UTC: write it as '2020-01-04 00:00:00Z' or '2020-01-04 00:00:00+01:00'",
            ) from None
        raise UserError(
            "split_values", f"cannot compare with split_column {column!r} of type {arrow_type} ({error})"
        ) from None


def row_splits(policy: SplitPolicy, group: SortedGroup) -> np.ndarray:
    """Split index of every row of the sorted group; n_splits for a row in no split."""
    if policy.method == "within_sequence":
        bounds = split_bounds(group.lengths, policy.ratios)
        sequence_of_row = np.repeat(np.arange(group.lengths.shape[0]), group.lengths)
        local = np.arange(group.sequence_ids.shape[0], dtype=np.int64) - group.starts[sequence_of_row]
        return (local[:, None] >= bounds[sequence_of_row, 1:]).sum(axis=1).astype(np.int64)
    if policy.method == "between_sequence":
        index = np.searchsorted(policy.sequence_ids, group.sequence_ids[group.starts])
        return np.repeat(policy.sequence_splits[index], group.lengths)
    column = group.table.column(policy.split_column)
    if all(type(c) is int for c in policy.cutoffs) and pa.types.is_integer(column.type) and not column.null_count:
        return _integer_splits(column.to_numpy(), policy.cutoffs)
    if all(isinstance(c, (int, float)) for c in policy.cutoffs):
        values = pc.cast(column, pa.float64(), safe=False).to_numpy()
        return np.searchsorted(np.asarray(policy.cutoffs), values, side="right").astype(np.int64)
    at_or_above = [pc.greater_equal(column, cutoff).to_numpy(zero_copy_only=False) for cutoff in policy.cutoffs]
    return np.sum(at_or_above, axis=0).astype(np.int64)


def _integer_splits(values: np.ndarray, thresholds: tuple[int, ...]) -> np.ndarray:
    """Split index of integer values: how many of the integer thresholds each is at or above, compared exactly."""
    limits = np.iinfo(values.dtype)
    splits = np.zeros(values.shape[0], dtype=np.int64)
    for threshold in thresholds:
        if threshold <= limits.min:
            splits += 1
        elif threshold <= limits.max:
            splits += values >= values.dtype.type(threshold)
    return splits
