"""Depth layouts in preprocessing: the child rows of each (sequenceId, itemPosition) become one item with slots.

The rules are 3.x's. Within a file the rows of an item are adjacent and items come in increasing
(sequenceId, itemPosition) order (`ItemOrder`, checked while scanning); an item lives in one file
only. A child's slot is its position minus `position_base`, inside [0, capacity) and distinct within
its item; without `allow_gaps` the occupied slots form a prefix from 0 (tail padding is always
allowed). Item-level (shallow) columns, the split column included, hold one value on every child row
of an item. Item positions are continuous within a sequence. Shallow statistics count each item
once, deep statistics every occupied slot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.config.errors import UserError
from sequifier.config.preprocess import DepthLayoutConfig
from sequifier.preprocess.columns import ColumnPlan
from sequifier.preprocess.groups import FILE_COLUMN, Group, SortedGroup, read_group, sequence_layout

# With depth layouts `batches_per_file` counts windows per pt shard (3.x's default 1024), and the
# metadata records tensor_payload_version 2.
DEPTH_WINDOWS_PER_SHARD = 1024
DEPTH_PAYLOAD_VERSION = 2


class ItemOrder:
    """Checks, batch after batch, that each file's items come in increasing (sequenceId, itemPosition) order."""

    def __init__(self) -> None:
        self.last: dict[object, tuple[int, int]] = {}

    def check(self, batch, sequence_ids: np.ndarray, item_positions: np.ndarray) -> None:
        """`batch` (a sources.Batch) holds the rows; its identifiers are `sequence_ids`, `item_positions`."""
        if sequence_ids.shape[0] == 0:
            return
        previous = self.last.get(batch.file)
        carried = 0 if previous is None else 1
        keys_s = sequence_ids if previous is None else np.concatenate(([previous[0]], sequence_ids))
        keys_i = item_positions if previous is None else np.concatenate(([previous[1]], item_positions))
        back = (keys_s[1:] < keys_s[:-1]) | ((keys_s[1:] == keys_s[:-1]) & (keys_i[1:] < keys_i[:-1]))
        if back.any():
            pair = int(np.flatnonzero(back)[0])
            raise UserError(
                "itemPosition",
                "with depth_layouts the rows of an item are adjacent and items increase in (sequenceId, "
                f"itemPosition) order within a file, but ({keys_s[pair + 1]}, {keys_i[pair + 1]}) at "
                f"{batch.where(pair + 1 - carried)} comes after ({keys_s[pair]}, {keys_i[pair]})",
            )
        self.last[batch.file] = (int(sequence_ids[-1]), int(item_positions[-1]))


@dataclass(frozen=True)
class Items:
    """A group's items: `children` are its rows sorted by (sequenceId, itemPosition, child position), `group`
    holds one row per item (its first child), and every child row knows its item and slot."""

    children: pa.Table
    group: SortedGroup
    item_of_row: np.ndarray
    slot_of_row: np.ndarray
    capacity: int
    first_rows: np.ndarray


def load_items(group: Group, plan: ColumnPlan, columns: list[str] | None = None) -> Items:
    """A spilled group's child rows (only `columns` besides what the layout needs) gathered into items."""
    layout = plan.layout
    wanted = None if columns is None else [*columns, layout.position_column, FILE_COLUMN]
    table, sequence_ids, item_positions = _sorted_children(read_group(group, wanted), layout)
    own = {"sequenceId", "itemPosition", layout.position_column, FILE_COLUMN, *layout.columns}
    shallow = [name for name in table.column_names if name not in own]
    return collect_items(table, sequence_ids, item_positions, layout, shallow)


def _sorted_children(table: pa.Table, layout: DepthLayoutConfig) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The rows sorted by (sequenceId, itemPosition, child position), with their sequence ids and item positions."""
    sequence_ids = table.column("sequenceId").to_numpy()
    item_positions = table.column("itemPosition").to_numpy()
    children = table.column(layout.position_column).to_numpy()
    order = np.lexsort((children, item_positions, sequence_ids))
    if np.any(order != np.arange(order.shape[0])):
        table = table.take(pa.array(order))
    return table, sequence_ids[order], item_positions[order]


def collect_items(
    table: pa.Table, sequence_ids: np.ndarray, item_positions: np.ndarray, layout: DepthLayoutConfig, shallow: list[str]
) -> Items:
    """Group sorted child rows into items, checking the layout's rules; `shallow` columns must agree per item."""
    count = sequence_ids.shape[0]
    is_first = np.ones(count, dtype=bool)
    is_first[1:] = (sequence_ids[1:] != sequence_ids[:-1]) | (item_positions[1:] != item_positions[:-1])
    first_rows = np.flatnonzero(is_first)
    item_of_row = np.cumsum(is_first) - 1
    where = _item_naming(sequence_ids, item_positions)
    _check_one_file(table, item_of_row, first_rows, where)
    slots = table.column(layout.position_column).to_numpy().astype(np.int64) - layout.position_base
    rank = np.arange(count) - first_rows[item_of_row]
    _check_slots(slots, rank, item_of_row, layout, where)
    for name in shallow:
        _check_shallow(table.column(name), item_of_row, first_rows, name, where)
    item_sequences, positions = sequence_ids[first_rows], item_positions[first_rows]
    starts, lengths = sequence_layout(item_sequences)
    step = np.diff(positions)
    gap = (step != 1) & (item_sequences[1:] == item_sequences[:-1])
    if gap.any():
        row = int(np.flatnonzero(gap)[0])
        raise UserError(
            "itemPosition",
            f"with depth_layouts item positions must be continuous within a sequence; sequenceId "
            f"{item_sequences[row]} jumps from {positions[row]} to {positions[row + 1]}",
        )
    group = SortedGroup(table.take(pa.array(first_rows)), item_sequences, positions, starts, lengths)
    return Items(table, group, item_of_row, slots, layout.context_length, first_rows)


def _item_naming(sequence_ids: np.ndarray, item_positions: np.ndarray):
    def where(row: int) -> str:
        return f"item (sequenceId={sequence_ids[row]}, itemPosition={item_positions[row]})"

    return where


def _check_one_file(table: pa.Table, item_of_row: np.ndarray, first_rows: np.ndarray, where) -> None:
    files = table.column(FILE_COLUMN).to_numpy()
    elsewhere = files != files[first_rows][item_of_row]
    if elsewhere.any():
        row = int(np.flatnonzero(elsewhere)[0])
        raise UserError("itemPosition", f"the rows of {where(row)} are spread over several input files")


def _check_slots(slots: np.ndarray, rank: np.ndarray, item_of_row: np.ndarray, layout, where) -> None:
    outside = (slots < 0) | (slots >= layout.context_length)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise UserError(
            layout.position_column,
            f"{where(row)} has a child at slot {slots[row]} (position {slots[row] + layout.position_base} - "
            f"position_base {layout.position_base}), outside the capacity [0, {layout.context_length})",
        )
    repeated = np.zeros(slots.shape[0], dtype=bool)
    repeated[1:] = (item_of_row[1:] == item_of_row[:-1]) & (slots[1:] == slots[:-1])
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise UserError(
            layout.position_column, f"{where(row)} has two children at position {slots[row] + layout.position_base}"
        )
    if not layout.allow_gaps and np.any(slots != rank):
        row = int(np.flatnonzero(slots != rank)[0])
        raise UserError(
            layout.position_column,
            f"{where(row)} leaves slot {rank[row]} empty before slot {slots[row]}; the occupied slots must be a "
            "prefix from 0 (set allow_gaps: true to allow gaps)",
        )


def _check_shallow(column: pa.ChunkedArray, item_of_row: np.ndarray, first_rows: np.ndarray, name: str, where) -> None:
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    reference = column.take(pa.array(first_rows[item_of_row]))
    equal = pc.fill_null(pc.equal(column, reference), False)
    both_missing = pc.and_(column.is_null(), reference.is_null())
    differs = pc.invert(pc.or_(equal, both_missing)).to_numpy(zero_copy_only=False)
    if differs.any():
        row = int(np.flatnonzero(differs)[0])
        raise UserError(
            name,
            f"is an item-level column, but the child rows of {where(row)} hold different values "
            f"({reference[row].as_py()!r} and {column[row].as_py()!r}); list it in the depth layout's columns "
            "or make it agree",
        )


def item_values(items: Items, values: np.ndarray, deep: bool) -> np.ndarray:
    """Per item: the value of its first child row (shallow), or [capacity] slots, padded with 0 (deep)."""
    if not deep:
        return values[items.first_rows]
    out = np.zeros((items.group.sequence_ids.shape[0], items.capacity), dtype=values.dtype)
    out[items.item_of_row, items.slot_of_row] = values
    return out


def item_masks(items: Items) -> np.ndarray:
    """[items, capacity]: which slots hold a child."""
    mask = np.zeros((items.group.sequence_ids.shape[0], items.capacity), dtype=bool)
    mask[items.item_of_row, items.slot_of_row] = True
    return mask
