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
from sequifier.config.errors import UserError, missing_folder
from sequifier.data.csv_meanings import recorded_beside
from sequifier.data.stored_windows import IDENTIFIER_COLUMNS, StoredWindows, concat_windows, materialized

INPUT_COLUMN = "inputCol"
WINDOW_LENGTH_KEY = b"sequifier.window_length"


def value_column_names(window_length: int) -> list[str]:
    """Parquet value columns, oldest slot first: "W-1", ..., "0"."""
    return [str(offset) for offset in range(window_length - 1, -1, -1)]


def stored_schema(window_length: int) -> pa.Schema:
    """Schema of the merged/sharded Parquet form; its key-value metadata records the window length."""
    fields = [pa.field(name, pa.int64()) for name in IDENTIFIER_COLUMNS] + [pa.field(INPUT_COLUMN, pa.large_string())]
    fields += [pa.field(name, pa.float64()) for name in value_column_names(window_length)]
    return pa.schema(fields, metadata={WINDOW_LENGTH_KEY: str(window_length).encode("ascii")})


def _value_columns_in(table: pa.Table, path: Path) -> list[str]:
    offsets = sorted((int(n) for n in table.schema.names if n.isdigit()), reverse=True)
    if not offsets or offsets != list(range(len(offsets) - 1, -1, -1)):
        raise UserError(str(path), 'value columns "W-1" ... "0" are missing or incomplete')
    written = (table.schema.metadata or {}).get(WINDOW_LENGTH_KEY, b"")
    if written.isdigit() and int(written) != len(offsets):
        raise UserError(
            str(path),
            f'holds {len(offsets)} value columns ("{offsets[0]}" ... "0"), but was written with window_length '
            f"{int(written)}: value columns were added or removed since",
        )
    return [str(offset) for offset in offsets]


def _read_table(path: Path) -> pa.Table:
    if path.exists() and not path.is_file():
        raise UserError(str(path), "is not a regular file; give a split file or a shard folder")
    if not path.is_file():
        raise UserError(str(path), f"split file not found{missing_folder(path)} (run `sequifier preprocess` first?)")
    try:
        csv = path.suffix.lower() == ".csv"
        table = pv.read_csv(path) if csv else pq.read_table(path, page_checksum_verification=True)
        if csv and (written := recorded_beside(path, WINDOW_LENGTH_KEY)) is not None:
            table = table.replace_schema_metadata({WINDOW_LENGTH_KEY: written.encode("ascii", "replace")})
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
            fits, wanted = pa.types.is_integer(field.type), "integers"
        elif field.name == INPUT_COLUMN:
            fits, wanted = pa.types.is_string(field.type) or pa.types.is_large_string(field.type), "strings"
        elif field.name.isdigit():
            fits, wanted = pa.types.is_integer(field.type) or pa.types.is_floating(field.type), "numbers"
        else:
            continue
        if not fits:
            raise UserError(
                str(path), f"column {field.name!r} has type {field.type}; stored windows hold {wanted} there"
            )
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
    value_names = _value_columns_in(table, path)
    if not table.num_rows:
        return concat_windows([], wanted, len(value_names))
    input_type = table.schema.field(INPUT_COLUMN).type
    table = table.filter(pc.is_in(table.column(INPUT_COLUMN), pa.array(wanted, input_type)))
    values = np.column_stack([table.column(n).to_numpy().astype(np.float64, copy=False) for n in value_names])
    input_col = table.column(INPUT_COLUMN)
    rows_by_column = {column: np.flatnonzero(pc.equal(input_col, column).to_numpy()) for column in wanted}
    bookkeeping = np.column_stack(
        [table.column(name).to_numpy().astype(np.int64) for name in IDENTIFIER_COLUMNS]
    ).reshape(table.num_rows, len(IDENTIFIER_COLUMNS))
    rows_by_column = _rows_in_window_order(rows_by_column, bookkeeping, wanted, path)
    reference_rows = rows_by_column[wanted[0]] if wanted else np.zeros(0, dtype=np.int64)
    identifiers = {attr: bookkeeping[reference_rows, index] for index, attr in enumerate(IDENTIFIER_COLUMNS.values())}
    arrays = {
        column: materialized(values[rows], dtypes[column], f"{path}: column {column!r}")
        for column, rows in rows_by_column.items()
    }
    return StoredWindows(columns=arrays, **identifiers)


def _rows_in_window_order(
    rows_by_column: dict[str, np.ndarray], bookkeeping: np.ndarray, wanted: list[str], path: Path
) -> dict[str, np.ndarray]:
    """Each column's rows in the order of the first column's windows.

    A window is identified by (sequenceId, subsequenceId); the rows of one window must agree on all of its
    bookkeeping, so that a file sorted by other columns is read right or refused, never mixed across windows.
    """
    if not wanted:
        return rows_by_column
    first = wanted[0]
    reference = rows_by_column[first]
    ordered = {first: reference}
    for column in wanted[1:]:
        rows = rows_by_column[column]
        if rows.shape != reference.shape:
            raise UserError(str(path), f"column {column!r} has {rows.size} windows, {first!r} has {reference.size}")
        if not np.array_equal(bookkeeping[rows], bookkeeping[reference]):
            rows = _matched_rows(rows, reference, bookkeeping, (column, first), path)
        ordered[column] = rows
    return ordered


def _matched_rows(
    rows: np.ndarray, reference: np.ndarray, bookkeeping: np.ndarray, columns: tuple[str, str], path: Path
) -> np.ndarray:
    """`rows` reordered so that each lies in the window of the `reference` row at its place."""
    column, first = columns
    keys = [bookkeeping[reference][:, :2], bookkeeping[rows][:, :2]]
    orders = [np.lexsort((key[:, 1], key[:, 0])) for key in keys]
    sorted_keys = [key[order] for key, order in zip(keys, orders)]
    for name, key in zip((first, column), sorted_keys):
        repeated = np.flatnonzero((key[1:] == key[:-1]).all(axis=1))
        if repeated.size:
            raise UserError(
                str(path), f"window {_spelled(key[repeated[0]])} has two rows of column {name!r}; a window has one"
            )
    differing = np.flatnonzero((sorted_keys[0] != sorted_keys[1]).any(axis=1))
    if differing.size:
        missing = sorted_keys[0][differing[0]]
        raise UserError(str(path), f"column {column!r} has no row for window {_spelled(missing)}")
    matched = np.empty_like(rows)
    matched[orders[0]] = rows[orders[1]]
    disagreeing = np.flatnonzero((bookkeeping[matched] != bookkeeping[reference]).any(axis=1))
    if disagreeing.size:
        row = disagreeing[0]
        field = int(np.flatnonzero(bookkeeping[matched[row]] != bookkeeping[reference[row]])[0])
        name = list(IDENTIFIER_COLUMNS)[field]
        raise UserError(
            str(path),
            f"the rows of window {_spelled(bookkeeping[reference[row]])} disagree on {name}: "
            f"{bookkeeping[reference[row], field]} for column {first!r}, {bookkeeping[matched[row], field]} for "
            f"{column!r}",
        )
    return matched


def _spelled(key: np.ndarray) -> str:
    return f"(sequenceId {key[0]}, subsequenceId {key[1]})"


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
