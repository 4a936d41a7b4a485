"""Sequence groups: contiguous sequenceId ranges of similar row counts, spilled to disk so each is processed alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from sequifier.config.errors import UserError
from sequifier.preprocess.checks import identifier_values
from sequifier.preprocess.columns import ColumnPlan
from sequifier.preprocess.sources import InputSource, iter_batches
from sequifier.progress import Progress

# Window slots per group (a sequence's windows times window_length): the unit of work and of peak memory, which
# grows with the windows written, padding included, more than with the rows read. Groups grow beyond it only past
# MAX_GROUPS groups.
GROUP_SLOTS = 1 << 18
MAX_GROUPS = 512
# Spill column of depth-layout runs: the index of the input file each row came from (an item lives in one file).
FILE_COLUMN = "__sequifier_file"


@dataclass(frozen=True)
class Group:
    """One spilled group: sequences [first_sequence, end_sequence) of the scan's sorted sequence ids."""

    index: int
    path: Path
    rows: int
    first_sequence: int
    end_sequence: int


@dataclass(frozen=True)
class SortedGroup:
    """A group's rows sorted by (sequenceId, itemPosition), with the start row and length of each sequence."""

    table: pa.Table
    sequence_ids: np.ndarray
    item_positions: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray


class DuplicatePosition(UserError):
    """Two rows of one sequence at one itemPosition; `found_at` names the input rows once they are located."""

    def __init__(self, sequence_id: int, item_position: int, found_at: str = ""):
        self.sequence_id, self.item_position, self.found_at = sequence_id, item_position, found_at
        at = f" at {found_at}" if found_at else ""
        super().__init__(
            "itemPosition",
            f"duplicate (sequenceId={sequence_id}, itemPosition={item_position}){at}; "
            "positions must be unique per sequence",
        )

    def __reduce__(self):
        return DuplicatePosition, (self.sequence_id, self.item_position, self.found_at)


def locate_duplicate(source: InputSource, duplicate: DuplicatePosition) -> DuplicatePosition:
    """The same duplicate, naming the first two input rows that hold it (one more pass over the identifiers)."""
    found = []
    for batch in iter_batches(source, ["sequenceId", "itemPosition"]):
        same = (identifier_values(batch, "sequenceId") == duplicate.sequence_id) & (
            identifier_values(batch, "itemPosition") == duplicate.item_position
        )
        found += [batch.where(int(row)) for row in np.flatnonzero(same)[: 2 - len(found)]]
        if len(found) == 2:
            break
    return DuplicatePosition(duplicate.sequence_id, duplicate.item_position, " and ".join(found))


def sequence_layout(sequence_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start row and length of each sequence in rows sorted by sequenceId."""
    is_start = np.ones(sequence_ids.shape[0], dtype=bool)
    is_start[1:] = sequence_ids[1:] != sequence_ids[:-1]
    starts = np.flatnonzero(is_start)
    lengths = np.diff(np.append(starts, sequence_ids.shape[0]))
    return starts.astype(np.int64), lengths.astype(np.int64)


def window_slots(lengths: np.ndarray, window_length: int, stride: int) -> np.ndarray:
    """Slots of the windows each sequence of `lengths` items gives one split: short sequences are padded to a whole
    window, long ones give a window every `stride` items."""
    extra_windows = -(-np.maximum(lengths - window_length, 0) // stride)
    return window_length * (1 + extra_windows)


def plan_groups(weights: np.ndarray, min_groups: int, group_size: int | None = None) -> np.ndarray:
    """First sequence index of every group, then the number of sequences, from each sequence's weight (its window
    slots) and the weight a group holds (GROUP_SLOTS).

    With n groups wanted, group k ends at the sequence boundary nearest to k/n of all the weight.
    """
    total = int(weights.sum())
    wanted = min(max(min_groups, -(-total // (group_size or GROUP_SLOTS))), MAX_GROUPS, weights.shape[0])
    ends = np.cumsum(weights)
    targets = total * np.arange(1, wanted) / wanted
    right = np.searchsorted(ends, targets, side="left")
    left = np.maximum(right - 1, 0)
    nearer_left = (right > 0) & (targets - ends[left] < ends[right] - targets)
    cuts = np.where(nearer_left, left, right) + 1
    cuts = np.unique(cuts[(cuts > 0) & (cuts < weights.shape[0])])
    return np.concatenate(([0], cuts, [weights.shape[0]])).astype(np.int64)


def _spill_schema(source: InputSource, columns: ColumnPlan) -> pa.Schema:
    fields = [source.schema.field(name) for name in columns.read_columns]
    fields = [pa.field(f.name, pa.int64()) if f.name in ("sequenceId", "itemPosition") else f for f in fields]
    return pa.schema(fields + ([pa.field(FILE_COLUMN, pa.int32())] if columns.layout else []))


def partition(
    source: InputSource,
    columns: ColumnPlan,
    sequence_ids: np.ndarray,
    bounds: np.ndarray,
    folder: Path,
    progress: Progress,
) -> list[Group]:
    """Second pass: route every row to its group's spill file (Arrow IPC)."""
    schema = _spill_schema(source, columns)
    lowest = sequence_ids[bounds[:-1]]
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"group-{k:05d}.arrow" for k in range(lowest.shape[0])]
    writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
    rows = np.zeros(lowest.shape[0], dtype=np.int64)
    try:
        for batch in iter_batches(source, columns.read_columns):
            arrays = [
                pa.array(identifier_values(batch, n)) if n in ("sequenceId", "itemPosition") else batch.data.column(n)
                for n in schema.names
                if n != FILE_COLUMN
            ]
            if columns.layout:
                file_index = source.files.index(batch.file)
                arrays.append(pa.array(np.full(batch.data.num_rows, file_index, dtype=np.int32)))
            data = pa.RecordBatch.from_arrays(arrays, schema=schema)
            group = np.searchsorted(lowest, arrays[0].to_numpy(), side="right") - 1
            if group[0] != group[-1] or np.any(group != group[0]):
                order = np.argsort(group, kind="stable")
                data, group = data.take(pa.array(order)), group[order]
            cut = np.flatnonzero(np.diff(group)) + 1
            for start, end in zip(np.concatenate(([0], cut)), np.concatenate((cut, [group.shape[0]]))):
                k = int(group[start])
                if k not in writers:
                    writers[k] = pa.ipc.new_file(paths[k], schema)
                writers[k].write_batch(data.slice(start, end - start))
                rows[k] += end - start
            progress.advance(batch.data.num_rows, batch.units)
    finally:
        for writer in writers.values():
            writer.close()
    return [Group(k, paths[k], int(rows[k]), int(bounds[k]), int(bounds[k + 1])) for k in range(lowest.shape[0])]


def read_group(group: Group, columns: list[str] | None = None) -> pa.Table:
    """A spilled group's rows as they were written (only `columns` besides the identifiers)."""
    with pa.OSFile(str(group.path)) as handle:
        table = pa.ipc.open_file(handle).read_all()
    if columns is not None:
        table = table.select(
            ["sequenceId", "itemPosition", *[c for c in columns if c not in ("sequenceId", "itemPosition")]]
        )
    return table.combine_chunks()


def load_sorted(group: Group, columns: list[str] | None = None) -> SortedGroup:
    """Read a spilled group (only `columns` besides the identifiers), sort it, reject duplicate positions."""
    table = read_group(group, columns)
    sequence_ids = table.column("sequenceId").to_numpy()
    item_positions = table.column("itemPosition").to_numpy()
    order = np.lexsort((item_positions, sequence_ids))
    if np.any(order != np.arange(order.shape[0])):
        table = table.take(pa.array(order))
        sequence_ids, item_positions = sequence_ids[order], item_positions[order]
    duplicate = (sequence_ids[1:] == sequence_ids[:-1]) & (item_positions[1:] == item_positions[:-1])
    if duplicate.any():
        row = int(np.flatnonzero(duplicate)[0])
        raise DuplicatePosition(int(sequence_ids[row]), int(item_positions[row]))
    starts, lengths = sequence_layout(sequence_ids)
    return SortedGroup(table, sequence_ids, item_positions, starts, lengths)
