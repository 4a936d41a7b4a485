"""Per-group work run in worker processes: fitting (moments, vocabularies), and encoding + windowing + writing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.data.metadata import normalize_values
from sequifier.data.stored_windows import StoredWindows, concat_windows
from sequifier.preprocess.columns import ColumnPlan
from sequifier.preprocess.depth import Items, item_masks, item_values, load_items
from sequifier.preprocess.groups import Group, SortedGroup, load_sorted, sequence_layout
from sequifier.preprocess.idmaps import CategoricalCodes
from sequifier.preprocess.moment_tree import TreeNodes, group_nodes
from sequifier.preprocess.outputs import OutputForm, write_task_split
from sequifier.preprocess.splitting import SplitPolicy, row_splits
from sequifier.preprocess.windows import build_split_windows


@dataclass(frozen=True)
class SharedWork:
    """What every task needs; handed to each worker process once."""

    columns: ColumnPlan
    split: SplitPolicy
    fit_on_all_data: bool
    codes: dict[str, CategoricalCodes]
    statistics: dict[str, dict[str, float]]
    normalize: bool
    window_length: int
    stride: int
    output: OutputForm
    shifts: dict[str, float]  # per real column: its first value, subtracted before moments are summed


@dataclass(frozen=True)
class WriteTask:
    """Consecutive groups whose windows go into one shard (or merged part) per split."""

    index: int
    groups: tuple[Group, ...]


def _real_values(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy().astype(np.float64, copy=False)


def _loaded(shared: SharedWork, group: Group, columns: list[str] | None = None) -> tuple[pa.Table, SortedGroup, Items]:
    """The group's rows, its items as a sorted group (one row each) and, with a depth layout, which item and
    slot each row (a child) fills; without one every row is an item."""
    layout = shared.columns.layout
    if layout is None:
        loaded = load_sorted(group, columns)
        return loaded.table, loaded, None
    items = load_items(group, shared.columns, columns)
    return items.children, items.group, items


@dataclass(frozen=True)
class GroupFit:
    """One group's share of the fit: moments per real column (and the span of its values in every split),
    distinct values per categorical column."""

    moments: dict[str, TreeNodes]
    values: dict[str, pa.Array]
    gaps: PositionGaps
    spans: dict[str, tuple[float, float]]


@dataclass(frozen=True)
class PositionGaps:
    """Sequences whose items of one split do not have consecutive itemPositions, and the first such step."""

    sequences: int = 0
    example: tuple[int, int, int] | None = None  # (sequenceId, itemPosition, the next one in its split)

    def merged(self, other: PositionGaps) -> PositionGaps:
        return PositionGaps(self.sequences + other.sequences, self.example or other.example)


def position_gaps(group: SortedGroup, splits: np.ndarray, n_splits: int) -> PositionGaps:
    """Stored windows record each window's first itemPosition only, so readers take the items after it as
    consecutive: these are the sequences where that is not so."""
    sequences, in_split, positions = group.sequence_ids, splits, group.item_positions
    if np.any((sequences[1:] == sequences[:-1]) & (in_split[1:] < in_split[:-1])):  # value_cutoff interleaves splits
        order = np.lexsort((positions, in_split, sequences))
        sequences, in_split, positions = sequences[order], in_split[order], positions[order]
    same = (sequences[1:] == sequences[:-1]) & (in_split[1:] == in_split[:-1]) & (in_split[1:] < n_splits)
    gap = np.flatnonzero(same & (np.diff(positions) != 1))
    if not gap.size:
        return PositionGaps()
    first = int(gap[0])
    example = (int(sequences[first]), int(positions[first]), int(positions[first + 1]))
    return PositionGaps(int(np.unique(sequences[gap]).size), example)


def fit_group(shared: SharedWork, group: Group) -> GroupFit:
    """Moments of the real columns and distinct values of the categorical ones over the rows used for fitting.

    Those are the rows of split 0, or all rows (including any in no split) with normalize_on_all_data, as in 3.x.
    With a depth layout a shallow real counts once per item, a deep real once per occupied slot.
    """
    columns = shared.columns
    wanted = list(dict.fromkeys([*columns.real, *columns.categorical, *filter(None, [shared.split.split_column])]))
    rows, item_group, items = _loaded(shared, group, wanted)
    splits = row_splits(shared.split, item_group)
    fit_items = None if shared.fit_on_all_data else splits == 0
    fit_rows = fit_items[items.item_of_row] if items is not None and fit_items is not None else fit_items
    n_sequences = group.end_sequence - group.first_sequence
    sequence_of_item = np.repeat(np.arange(n_sequences), item_group.lengths)
    moments, spans = {}, {}
    for name in columns.real:
        deep = name in columns.deep
        values = _real_values(rows if deep else item_group.table, name)
        spans[name] = (float(np.min(values)), float(np.max(values))) if values.size else (np.inf, -np.inf)
        sequence = sequence_of_item[items.item_of_row] if deep else sequence_of_item
        chosen = fit_rows if deep else fit_items
        if chosen is not None:
            values, sequence = values[chosen], sequence[chosen]
        moments[name] = group_nodes(values, sequence, group.first_sequence, n_sequences, shared.shifts[name])
    distinct = {}
    for name in columns.categorical:
        column = rows.column(name)
        distinct[name] = pc.unique(column if fit_rows is None else column.filter(pa.array(fit_rows)))
    return GroupFit(moments, distinct, position_gaps(item_group, splits, shared.split.n_splits), spans)


def _encoded(shared: SharedWork, rows: pa.Table, items: Items | None) -> dict[str, np.ndarray]:
    """Encoded values per item: a value per selected column, [capacity] slots per deep column."""
    values = {}
    for name in shared.columns.selected:
        if name in shared.codes:
            encoded = shared.codes[name].encode(rows.column(name))
        else:
            raw = _real_values(rows, name)
            encoded = normalize_values(raw, shared.statistics[name]) if shared.normalize else raw
        values[name] = encoded if items is None else item_values(items, encoded, name in shared.columns.deep)
    return values


def _group_windows(shared: SharedWork, group: Group) -> list[StoredWindows]:
    rows, loaded, items = _loaded(shared, group)
    splits = row_splits(shared.split, loaded)
    values = _encoded(shared, rows, items)
    masks = {shared.columns.layout_name: item_masks(items)} if items is not None else {}
    per_split = []
    for split in range(shared.split.n_splits):
        chosen = np.flatnonzero(splits == split)
        sequence_ids, positions = loaded.sequence_ids[chosen], loaded.item_positions[chosen]
        starts, lengths = sequence_layout(sequence_ids)
        per_split.append(
            build_split_windows(
                {name: column[chosen] for name, column in values.items()},
                sequence_ids,
                positions,
                part_starts=starts,
                part_lengths=lengths,
                window_length=shared.window_length,
                stride=shared.stride,
                depth_masks={layout: mask[chosen] for layout, mask in masks.items()},
            )
        )
    return per_split


def write_task(shared: SharedWork, task: WriteTask) -> list:
    """Windows of the task's groups per split, written; returns per split the part/shard entry (None when empty)."""
    per_split: list[list[StoredWindows]] = [[] for _ in range(shared.split.n_splits)]
    for group in task.groups:
        for split, windows in enumerate(_group_windows(shared, group)):
            per_split[split].append(windows)
        group.path.unlink()
    columns, length = shared.columns.selected, shared.window_length
    return [
        write_task_split(shared.output, split, task.index, concat_windows(parts, columns, length))
        for split, parts in enumerate(per_split)
    ]
