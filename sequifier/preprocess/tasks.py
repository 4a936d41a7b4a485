"""Per-group work run in worker processes: fitting (moments, vocabularies), and encoding + windowing + writing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.data.metadata import normalize_values
from sequifier.data.stored import StoredWindows, concat_windows
from sequifier.preprocess.columns import ColumnPlan
from sequifier.preprocess.groups import Group, SortedGroup, load_sorted, sequence_layout
from sequifier.preprocess.idmaps import CategoricalCodes
from sequifier.preprocess.outputs import OutputForm, write_task_split
from sequifier.preprocess.splitting import SplitPolicy, row_splits
from sequifier.preprocess.statistics import Moments
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


@dataclass(frozen=True)
class WriteTask:
    """Consecutive groups whose windows go into one shard (or merged part) per split."""

    index: int
    groups: tuple[Group, ...]


def _real_values(group: SortedGroup, name: str) -> np.ndarray:
    return group.table.column(name).to_numpy().astype(np.float64, copy=False)


@dataclass(frozen=True)
class GroupFit:
    """One group's share of the fit: moments per real column, distinct values per categorical column."""

    moments: dict[str, Moments]
    values: dict[str, pa.Array]


def fit_group(shared: SharedWork, group: Group) -> GroupFit:
    """Moments of the real columns and distinct values of the categorical ones over the rows used for fitting.

    Those are the rows of split 0, or all rows (including any in no split) with normalize_on_all_data, as in 3.x.
    """
    columns = shared.columns
    wanted = list(dict.fromkeys([*columns.real, *columns.categorical, *filter(None, [shared.split.split_column])]))
    loaded = load_sorted(group, wanted)
    fit_rows = None if shared.fit_on_all_data else row_splits(shared.split, loaded) == 0
    moments = {}
    for name in columns.real:
        values = _real_values(loaded, name)
        moments[name] = Moments.of(values if fit_rows is None else values[fit_rows])
    distinct = {}
    for name in columns.categorical:
        column = loaded.table.column(name)
        distinct[name] = pc.unique(column if fit_rows is None else column.filter(pa.array(fit_rows)))
    return GroupFit(moments, distinct)


def _encoded(shared: SharedWork, group: SortedGroup) -> dict[str, np.ndarray]:
    values = {}
    for name in shared.columns.selected:
        if name in shared.codes:
            values[name] = shared.codes[name].encode(group.table.column(name))
        else:
            raw = _real_values(group, name)
            values[name] = normalize_values(raw, shared.statistics[name]) if shared.normalize else raw
    return values


def _group_windows(shared: SharedWork, group: Group) -> list[StoredWindows]:
    loaded = load_sorted(group)
    splits = row_splits(shared.split, loaded)
    values = _encoded(shared, loaded)
    per_split = []
    for split in range(shared.split.n_splits):
        rows = np.flatnonzero(splits == split)
        sequence_ids, positions = loaded.sequence_ids[rows], loaded.item_positions[rows]
        starts, lengths = sequence_layout(sequence_ids)
        per_split.append(
            build_split_windows(
                {name: column[rows] for name, column in values.items()},
                sequence_ids,
                positions,
                part_starts=starts,
                part_lengths=lengths,
                window_length=shared.window_length,
                stride=shared.stride,
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
