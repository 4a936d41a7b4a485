"""Stored windows on disk: load a split into per-column [N, W] arrays, and write one as merged Parquet."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sequifier.config.errors import UserError
from sequifier.data.metadata import temp_path_next_to

INPUT_COLUMN = "inputCol"
# Parquet identifier column -> StoredWindows attribute.
IDENTIFIER_COLUMNS = {
    "sequenceId": "sequence_ids",
    "subsequenceId": "subsequence_ids",
    "startItemPosition": "start_item_positions",
    "leftPadLength": "left_pad_lengths",
    "splitStartItemPosition": "split_start_item_positions",
    "splitEndItemPosition": "split_end_item_positions",
}


@dataclass(frozen=True)
class StoredWindows:
    """Windows of one split; row n of every array is window n, slot 0 the oldest item."""

    columns: dict[str, np.ndarray]
    sequence_ids: np.ndarray
    subsequence_ids: np.ndarray
    start_item_positions: np.ndarray
    left_pad_lengths: np.ndarray
    split_start_item_positions: np.ndarray
    split_end_item_positions: np.ndarray

    def __len__(self) -> int:
        return int(self.sequence_ids.shape[0])


def value_column_names(window_length: int) -> list[str]:
    """Parquet value columns, oldest slot first: "W-1", ..., "0"."""
    return [str(offset) for offset in range(window_length - 1, -1, -1)]


def _value_columns_in(names: Sequence[str], path: Path) -> list[str]:
    offsets = sorted((int(n) for n in names if n.isdigit()), reverse=True)
    if not offsets or offsets != list(range(len(offsets) - 1, -1, -1)):
        raise UserError(str(path), 'value columns "W-1" ... "0" are missing or incomplete')
    return [str(offset) for offset in offsets]


def _read_table(path: Path) -> pa.Table:
    if path.is_dir():
        raise UserError(str(path), "sharded split folders are not supported yet")
    if not path.is_file():
        raise UserError(str(path), "split file not found (run `sequifier preprocess` first?)")
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise UserError(str(path), f"not a readable Parquet file ({error})") from None
    missing = [n for n in [*IDENTIFIER_COLUMNS, INPUT_COLUMN] if n not in table.schema.names]
    if missing:
        raise UserError(str(path), f"not a stored-window file: missing column(s) {', '.join(missing)}")
    return table


def _check_columns_stored(table: pa.Table, wanted: Sequence[str], path: Path) -> None:
    if table.num_rows == 0:
        return  # a split without windows stores no column names
    stored = set(pc.unique(table.column(INPUT_COLUMN)).to_pylist())
    for column in wanted:
        if column not in stored:
            raise UserError(column, f"column is not stored in {path}")


def load_split(path: Path, columns: Sequence[str], categorical: Collection[str]) -> StoredWindows:
    """Load a merged-Parquet split; only `columns` are materialized, `categorical` ones as int64 ids."""
    path = Path(path)
    wanted = list(columns)
    table = _read_table(path)
    _check_columns_stored(table, wanted, path)
    input_type = table.schema.field(INPUT_COLUMN).type
    table = table.filter(pc.is_in(table.column(INPUT_COLUMN), pa.array(wanted, input_type)))
    value_names = _value_columns_in(table.schema.names, path)
    values = np.column_stack([table.column(n).to_numpy() for n in value_names]) if table.num_rows else (
        np.zeros((0, len(value_names)), dtype=np.float64)
    )
    input_col = table.column(INPUT_COLUMN)
    rows_by_column = {column: np.flatnonzero(pc.equal(input_col, column).to_numpy()) for column in wanted}
    reference_rows = rows_by_column[wanted[0]] if wanted else np.zeros(0, dtype=np.int64)
    identifiers = {
        attr: table.column(name).to_numpy().astype(np.int64)[reference_rows]
        for name, attr in IDENTIFIER_COLUMNS.items()
    }
    arrays = {}
    for column, rows in rows_by_column.items():
        if rows.shape != reference_rows.shape:
            counts = f"column {column!r} has {rows.size} windows, {wanted[0]!r} has {reference_rows.size}"
            raise UserError(str(path), counts)
        block = values[rows]
        arrays[column] = block.astype(np.int64) if column in categorical else block.astype(np.float64, copy=False)
    return StoredWindows(columns=arrays, **identifiers)


def windows_to_table(windows: StoredWindows, column_order: Sequence[str]) -> pa.Table:
    """One row per (window, column), rows of a window adjacent in `column_order`."""
    column_order = list(column_order)
    n_columns = len(column_order)
    stacked = np.stack([windows.columns[c].astype(np.float64) for c in column_order], axis=1)
    n_windows, _, window_length = stacked.shape
    values = stacked.reshape(n_windows * n_columns, window_length)
    data: dict[str, pa.Array] = {
        name: pa.array(np.repeat(getattr(windows, attr).astype(np.int64), n_columns), pa.int64())
        for name, attr in IDENTIFIER_COLUMNS.items()
    }
    data[INPUT_COLUMN] = pa.array(np.tile(np.array(column_order, dtype=object), n_windows), pa.large_string())
    for slot, name in enumerate(value_column_names(window_length)):
        data[name] = pa.array(np.ascontiguousarray(values[:, slot]), pa.float64())
    return pa.table(data)


def write_split_parquet(path: Path, windows: StoredWindows, column_order: Sequence[str]) -> None:
    """Write one split as merged Parquet, atomically (temp file in the same folder, then rename)."""
    path = Path(path)
    table = windows_to_table(windows, column_order)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path_next_to(path)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
