"""The Parquet/CSV form of stored windows: read one file (checked) into StoredWindows; write merged Parquet.

Everything that needs pyarrow lives here, so that training on pt shards never imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
import pyarrow.parquet as pq

from sequifier.atomic import atomic_path
from sequifier.config.errors import UserError, missing_folder
from sequifier.data.column_names import names_in, names_not_utf8
from sequifier.data.csv_meanings import recorded_beside
from sequifier.data.stored_windows import IDENTIFIER_COLUMNS, StoredWindows, concat_windows, materialized

INPUT_COLUMN = "inputCol"
WINDOW_LENGTH_KEY = b"sequifier.window_length"
BATCH_ROWS = 65_536  # rows of a merged Parquet split read at a time


def value_column_names(window_length: int) -> list[str]:
    """Parquet value columns, oldest slot first: "W-1", ..., "0"."""
    return [str(offset) for offset in range(window_length - 1, -1, -1)]


def stored_schema(window_length: int) -> pa.Schema:
    """Schema of the merged/sharded Parquet form; its key-value metadata records the window length."""
    fields = [pa.field(name, pa.int64()) for name in IDENTIFIER_COLUMNS] + [pa.field(INPUT_COLUMN, pa.large_string())]
    fields += [pa.field(name, pa.float64()) for name in value_column_names(window_length)]
    return pa.schema(fields, metadata={WINDOW_LENGTH_KEY: str(window_length).encode("ascii")})


def _value_columns_in(schema: pa.Schema, path: Path) -> list[str]:
    offsets = sorted((int(n) for n in schema.names if n.isdigit()), reverse=True)
    if not offsets or offsets != list(range(len(offsets) - 1, -1, -1)):
        raise UserError(str(path), 'value columns "W-1" ... "0" are missing or incomplete')
    written = (schema.metadata or {}).get(WINDOW_LENGTH_KEY, b"")
    if written.isdigit() and int(written) != len(offsets):
        raise UserError(
            str(path),
            f'holds {len(offsets)} value columns ("{offsets[0]}" ... "0"), but was written with window_length '
            f"{int(written)}: value columns were added or removed since",
        )
    return [str(offset) for offset in offsets]


def _check_split_file(path: Path) -> None:
    if path.exists() and not path.is_file():
        raise UserError(str(path), "is not a regular file; give a split file or a shard folder")
    if not path.is_file():
        raise UserError(str(path), f"split file not found{missing_folder(path)} (run `sequifier preprocess` first?)")


def _read_table(path: Path) -> pa.Table:
    _check_split_file(path)
    try:
        csv = path.suffix.lower() == ".csv"
        table = pv.read_csv(path) if csv else pq.read_table(path, page_checksum_verification=True)
        if csv and (written := recorded_beside(path, WINDOW_LENGTH_KEY)) is not None:
            table = table.replace_schema_metadata({WINDOW_LENGTH_KEY: written.encode("ascii", "replace")})
    except (pa.ArrowException, OSError) as error:
        raise _unreadable(path, error) from None
    except UnicodeDecodeError:
        raise names_not_utf8(path) from None
    _check_schema(table.schema, path, table.num_rows == 0)
    _check_complete(table, path)
    return table


def not_stored_windows(path: Path) -> str | None:
    """Why the file `path` is no split file of stored windows, from its schema or header alone; None if it is one."""
    try:
        if path.suffix.lower() == ".csv":
            with open(path, "rb") as stream:
                schema = pv.open_csv(stream).schema
        else:
            schema = pq.read_schema(path)
        names = names_in(schema, path)
    except (pa.ArrowException, OSError) as error:
        return f"cannot be read as stored windows ({' '.join(str(error).split())[:200]})"
    except UnicodeDecodeError:
        return names_not_utf8(path).problem
    except UserError as error:
        return error.problem
    missing = _missing_bookkeeping(names)
    return f"holds no stored windows (no column {', '.join(missing)})" if missing else None


def _missing_bookkeeping(names: list[str]) -> list[str]:
    """The identifier columns and inputCol that a table of these column names lacks."""
    return [name for name in [*IDENTIFIER_COLUMNS, INPUT_COLUMN] if name not in names]


def _check_schema(schema: pa.Schema, path: Path, empty: bool) -> None:
    """The bookkeeping columns are there; identifiers are integers, inputCol strings, values numbers."""
    missing = _missing_bookkeeping(names_in(schema, path))
    if missing:
        raise UserError(str(path), f"not a stored-window file: missing column(s) {', '.join(missing)}")
    if empty:
        return  # an empty CSV split has no types to check
    for field in schema:
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


def _check_complete(table: pa.Table, path: Path) -> None:
    """None of the bookkeeping and value columns has a missing value."""
    for name in table.schema.names:
        if (name in IDENTIFIER_COLUMNS or name == INPUT_COLUMN or name.isdigit()) and table.column(name).null_count:
            raise UserError(str(path), f"column {name!r} has missing values")


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
    value_names = _value_columns_in(table.schema, path)
    if not table.num_rows:
        return concat_windows([], wanted, len(value_names))
    return _windows_of(_wanted_rows(table, wanted), wanted, dtypes, value_names, path)


def _wanted_rows(table: pa.Table, wanted: list[str]) -> pa.Table:
    input_type = table.schema.field(INPUT_COLUMN).type
    return table.filter(pc.is_in(table.column(INPUT_COLUMN), pa.array(wanted, input_type)))


def _windows_of(
    table: pa.Table, wanted: list[str], dtypes: dict[str, np.dtype], value_names: list[str], path: Path
) -> StoredWindows:
    """The windows whose rows (of the `wanted` columns only) `table` holds."""
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


def parquet_window_count(path: Path, wanted: list[str]) -> int:
    """The windows of a merged Parquet split, counted from its inputCol column alone, a batch at a time; the
    `wanted` columns must be stored."""
    parquet = _opened_parquet(path)
    stored: set[str] = set()
    count = 0
    for batch in _batches(parquet, path, [INPUT_COLUMN]):
        names = batch.column(0)
        stored.update(pc.unique(names).to_pylist())
        if wanted:
            count += pc.sum(pc.equal(names, wanted[0])).as_py() or 0
    missing = [column for column in wanted if column not in stored]
    if missing and parquet.metadata.num_rows:
        raise UserError(missing[0], f"column is not stored in {path}")
    return count


def parquet_windows(
    path: Path, wanted: list[str], dtypes: dict[str, np.dtype], batch_rows: int = BATCH_ROWS
) -> Iterator[StoredWindows]:
    """The windows of a merged Parquet split in the order their last rows come, read `batch_rows` rows at a time.

    The rows of a window that a batch leaves incomplete wait for the next ones; files that keep a window's rows
    together (as every writer does) hold a batch and a few windows at a time, others at worst their whole rows.
    """
    parquet = _opened_parquet(path)
    value_names = _value_columns_in(parquet.schema_arrow, path)
    columns = [*IDENTIFIER_COLUMNS, INPUT_COLUMN, *value_names]
    waiting: pa.Table | None = None
    for batch in _batches(parquet, path, columns, batch_rows):
        table = pa.Table.from_batches([batch])
        _check_complete(table, path)
        table = _wanted_rows(table, wanted)
        if waiting is not None:
            table = pa.concat_tables([waiting, table])
        whole = _whole_windows(table, len(wanted))
        if whole.all():
            waiting = None
        else:
            waiting = table.filter(pa.array(~whole))
            table = table.filter(pa.array(whole))
        if table.num_rows:
            yield _windows_of(table, wanted, dtypes, value_names, path)
    if waiting is not None and waiting.num_rows:
        raise _incomplete_window(waiting, wanted, path)


def _incomplete_window(rows: pa.Table, wanted: list[str], path: Path) -> UserError:
    """The first window left without a row of every column once the whole file is read."""
    keys = _window_keys(rows)
    window = keys[0]
    mine = (keys == window).all(axis=1)
    held = set(rows.column(INPUT_COLUMN).filter(pa.array(mine)).to_pylist())
    lacking = [column for column in wanted if column not in held]
    return UserError(
        str(path),
        f"window {_spelled(window)} has a row of {', '.join(map(repr, sorted(held)))} but none of "
        f"{', '.join(map(repr, lacking))} beside it (a row missing, or one repeated elsewhere in the file)",
    )


def _window_keys(table: pa.Table) -> np.ndarray:
    """(sequenceId, subsequenceId) of each row, as [rows, 2] int64."""
    return np.column_stack([table.column(name).to_numpy().astype(np.int64) for name in list(IDENTIFIER_COLUMNS)[:2]])


def _whole_windows(table: pa.Table, columns: int) -> np.ndarray:
    """Per row, whether its window (sequenceId, subsequenceId) has at least one row per column in `table`."""
    keys = _window_keys(table)
    if not len(keys):
        return np.zeros(0, dtype=bool)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)] >= columns


def _opened_parquet(path: Path) -> pq.ParquetFile:
    _check_split_file(path)
    try:
        parquet = pq.ParquetFile(path, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as error:
        raise _unreadable(path, error) from None
    except UnicodeDecodeError:
        raise names_not_utf8(path) from None
    _check_schema(parquet.schema_arrow, path, parquet.metadata.num_rows == 0)
    return parquet


def _batches(
    parquet: pq.ParquetFile, path: Path, columns: list[str], batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    try:
        yield from parquet.iter_batches(batch_size=batch_rows, columns=columns)
    except (pa.ArrowException, OSError) as error:
        raise _unreadable(path, error) from None


def _unreadable(path: Path, error: Exception) -> UserError:
    return UserError(str(path), f"not a readable stored-window file ({' '.join(str(error).split())[:200]})")


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
        if rows.shape != reference.shape or not np.array_equal(bookkeeping[rows], bookkeeping[reference]):
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
    if len(sorted_keys[0]) != len(sorted_keys[1]):
        held = [{tuple(key) for key in keys.tolist()} for keys in sorted_keys]
        lacking, window = (column, min(held[0] - held[1])) if held[0] - held[1] else (first, min(held[1] - held[0]))
        raise UserError(str(path), f"column {lacking!r} has no row for window {_spelled(np.array(window))}")
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
