"""First pass over the input: check every row, count rows per sequence, collect each categorical column's values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.preprocess.checks import (
    check_present,
    check_reals,
    check_window_positions,
    first_real,
    identifier_values,
)
from sequifier.preprocess.columns import ColumnPlan
from sequifier.preprocess.depth import ItemOrder
from sequifier.preprocess.idmaps import comparable
from sequifier.preprocess.sources import InputSource, iter_batches
from sequifier.progress import Progress

# Pending entries that trigger folding the per-batch results together (keeps memory to O(distinct values)).
COMPACT_AT = 1 << 20


@dataclass(frozen=True)
class ScanResult:
    """What the first pass learned: row count, sequences with their lengths, distinct categorical values."""

    rows: int
    sequence_ids: np.ndarray  # sorted, distinct
    sequence_lengths: np.ndarray
    values: dict[str, pa.Array]  # per categorical column: distinct non-null values, sorted
    first_reals: dict[str, float]  # per real column: the value of the input's first row


class _SequenceCounts:
    """Rows per sequenceId, from run lengths per batch folded together now and then."""

    def __init__(self) -> None:
        self.ids: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        self.pending = self.kept = 0

    def add(self, sequence_ids: np.ndarray) -> None:
        starts = np.flatnonzero(np.concatenate(([True], sequence_ids[1:] != sequence_ids[:-1])))
        self.ids.append(sequence_ids[starts])
        self.counts.append(np.diff(np.append(starts, sequence_ids.shape[0])))
        self.pending += starts.shape[0]
        if self.pending > max(COMPACT_AT, 2 * self.kept):
            self._fold()

    def _fold(self) -> None:
        ids, inverse = np.unique(np.concatenate(self.ids), return_inverse=True)
        counts = np.zeros(ids.shape[0], dtype=np.int64)
        np.add.at(counts, inverse, np.concatenate(self.counts))
        self.ids, self.counts = [ids], [counts]
        self.pending = self.kept = ids.shape[0]

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        self._fold()
        return self.ids[0], self.counts[0]


class DistinctValues:
    """Distinct values of one column, from per-batch distinct values folded together now and then."""

    def __init__(self, arrow_type: pa.DataType) -> None:
        self.type = arrow_type
        self.chunks: list[pa.Array] = []
        self.pending = self.kept = 0

    def add(self, column: pa.Array) -> None:
        distinct = pc.unique(column)
        self.chunks.append(distinct)
        self.pending += len(distinct)
        if self.pending > max(COMPACT_AT, 2 * self.kept):
            self._fold()

    def _fold(self) -> None:
        distinct = pc.unique(pa.chunked_array(self.chunks, type=self.type))
        self.chunks = [distinct]
        self.pending = self.kept = len(distinct)

    def result(self) -> pa.Array:
        self._fold()
        distinct = self.chunks[0].drop_null()
        if pa.types.is_floating(distinct.type):  # NaNs of other bits are one value
            nan = pc.is_nan(comparable(distinct))
            first_nan = pc.index(nan, True).as_py()
            if first_nan >= 0:
                distinct = pa.concat_arrays([distinct.filter(pc.invert(nan)), distinct.slice(first_nan, 1)])
        keys = {"value": comparable(distinct)}
        if pa.types.is_floating(distinct.type):  # -0.0 before 0.0, which compare equal, whatever the rows' order
            keys["negative"] = pc.less(pc.divide(1.0, distinct.cast(pa.float64())), 0.0)
        order = [("value", "ascending"), ("negative", "descending")][: len(keys)]
        return distinct.take(pc.sort_indices(pa.table(keys), sort_keys=order))


def scan(source: InputSource, columns: ColumnPlan, window_length: int, progress: Progress) -> ScanResult:
    """Read every row once; raises UserError for the first bad identifier, real value or split value."""
    counts = _SequenceCounts()
    values = {name: DistinctValues(source.schema.field(name).type) for name in columns.categorical}
    rows = 0
    first_reals: dict[str, float] = {}
    order = ItemOrder() if columns.layout else None
    for batch in iter_batches(source, columns.read_columns):
        sequence_ids = identifier_values(batch, "sequenceId")
        item_positions = identifier_values(batch, "itemPosition")
        check_window_positions(batch, item_positions, window_length)
        if order is not None:
            identifier_values(batch, columns.layout.position_column)
            order.check(batch, sequence_ids, item_positions)
        check_reals(batch, columns.real)
        if not first_reals:
            first_reals = {name: first_real(batch, name) for name in columns.real}
        if columns.split_column is not None:
            check_present(batch, columns.split_column, "split_column")
        counts.add(sequence_ids)
        for name, distinct in values.items():
            distinct.add(batch.data.column(name))
        rows += batch.data.num_rows
        progress.advance(batch.data.num_rows, batch.units)
    sequence_ids, lengths = counts.result()
    return ScanResult(
        rows=rows,
        sequence_ids=sequence_ids,
        sequence_lengths=lengths,
        values={name: distinct.result() for name, distinct in values.items()},
        first_reals=first_reals,
    )
