"""The Parquet/CSV form of stored windows: read one file (checked) into StoredWindows; write merged Parquet.

Everything that needs pyarrow lives here, so that training on pt shards never imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
import pyarrow.parquet as pq

from sequifier.atomic import atomic_path
from sequifier.config.errors import UserError
from sequifier.data.stored_windows import IDENTIFIER_COLUMNS, StoredWindows, materialized

INPUT_COLUMN = "inputCol"


def value_column_names(window_length: int) -> list[str]:
    """Parquet value columns, oldest slot first: "W-1", ..., "0"."""
    return [str(offset) for offset in range(window_length - 1, -1, -1)]


def stored_schema(window_length: int) -> pa.Schema:
    """Schema of the merged/sharded Parquet form."""
    fields = [pa.field(name, pa.int64()) for name in IDENTIFIER_COLUMNS] + [pa.field(INPUT_COLUMN, pa.large_string())]
    return pa.schema(fields + [pa.field(name, pa.float64()) for name in value_column_names(window_length)])


def _value_columns_in(names: Sequence[str], path: Path) -> list[str]:
    offsets = sorted((int(n) for n in names if n.isdigit()), reverse=True)
    if not offsets or offsets != list(range(len(offsets) - 1, -1, -1)):
        raise UserError(str(path), 'value columns "W-1" ... "0" are missing or incomplete')
    return [str(offset) for offset in offsets]


def _read_table(path: Path) -> pa.Table:
    if not path.is_file():
        raise UserError(str(path), "split file not found (run `sequifier preprocess` first?)")
    try:
        csv = path.suffix.lower() == ".csv"
        table = pv.read_csv(path) if csv else pq.read_table(path, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as error:
        raise UserError(
            str(path), f"not a readable stored-window file ({' '.join(str(error).split())[:200]})"
        ) from None
    missing = [n for n in [*IDENTIFIER_COLUMNS, INPUT_COLUMN] if n not in table.schema.names]
    if missing:
        raise UserError(str(path), f"not a stored-window file: missing column(s) {', '.join(missing)}")
    _check_table_types(table, path)
    return table


def _check_table_types(table: pa.Table, path: Path) -> None:
    """Identifiers are integers, inputCol strings, values numbers; none of them missing."""
    if table.num_rows == 0:
        return  # an empty CSV split has no types to check
    for field in table.schema:
        if field.name in IDENTIFIER_COLUMNS:
            fits = pa.types.is_integer(field.type)
        elif field.name == INPUT_COLUMN:
            fits = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        elif field.name.isdigit():
            fits = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
        else:
            continue
        if not fits:
            raise UserError(str(path), f"column {field.name!r} has type {field.type}, not the stored-window type")
        if table.column(field.name).null_count:
            raise UserError(str(path), f"column {field.name!r} has missing values")


def _check_columns_stored(table: pa.Table, wanted: Sequence[str], path: Path) -> None:
    if table.num_rows == 0:
        return  # a split without windows stores no column names
    stored = set(pc.unique(table.column(INPUT_COLUMN)).to_pylist())
    for column in wanted:
        if column not in stored:
            raise UserError(column, f"column is not stored in {path}")


def windows_from_table(path: Path, wanted: list[str], dtypes: dict[str, np.dtype]) -> StoredWindows:
    """The windows of one Parquet/CSV file, the `wanted` columns materialized as `dtypes`."""
    table = _read_table(path)
    _check_columns_stored(table, wanted, path)
    input_type = table.schema.field(INPUT_COLUMN).type
    table = table.filter(pc.is_in(table.column(INPUT_COLUMN), pa.array(wanted, input_type)))
    value_names = _value_columns_in(table.schema.names, path)
    values = (
        np.column_stack([table.column(n).to_numpy().astype(np.float64, copy=False) for n in value_names])
        if table.num_rows
        else (np.zeros((0, len(value_names)), dtype=np.float64))
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
        arrays[column] = materialized(block, dtypes[column], str(path))
    return StoredWindows(columns=arrays, **identifiers)


def windows_to_table(windows: StoredWindows, column_order: Sequence[str]) -> pa.Table:
    """One row per (window, column), rows of a window adjacent in `column_order`."""
    column_order = list(column_order)
    n_columns = len(column_order)
    n_windows = len(windows)
    window_length = windows.width
    stacked = np.empty((n_windows, n_columns, window_length), dtype=np.float64)
    for index, column in enumerate(column_order):
        stacked[:, index, :] = windows.columns[column]
    values = stacked.reshape(n_windows * n_columns, window_length)
    data: dict[str, pa.Array] = {
        name: pa.array(np.repeat(getattr(windows, attr).astype(np.int64, copy=False), n_columns), pa.int64())
        for name, attr in IDENTIFIER_COLUMNS.items()
    }
    names = pa.array(column_order, pa.large_string())
    data[INPUT_COLUMN] = names.take(pa.array(np.tile(np.arange(n_columns, dtype=np.int32), n_windows)))
    for slot, name in enumerate(value_column_names(window_length)):
        data[name] = pa.array(np.ascontiguousarray(values[:, slot]), pa.float64())
    return pa.table(data, schema=stored_schema(window_length))


def write_split_parquet(path: Path, windows: StoredWindows, column_order: Sequence[str]) -> None:
    """Write one split as merged Parquet, atomically."""
    table = windows_to_table(windows, column_order)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)
