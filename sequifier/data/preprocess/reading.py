"""Reading the raw input table: load one CSV/Parquet file, check identifiers, sort by sequence and position."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq

from sequifier.config.errors import UserError, did_you_mean
from sequifier.config.preprocess import ID_COLUMNS, PreprocessConfig


def _load_file(config: PreprocessConfig) -> pa.Table:
    path = config.preprocessing_data_path
    if path.is_dir():
        raise UserError(str(path), "reading a folder of input files is not supported yet (give one file)")
    if not path.is_file():
        raise UserError(str(path), "data file not found")
    try:
        if config.read_format == "csv":
            return pv.read_csv(path)
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise UserError(str(path), f"cannot read as {config.read_format} ({error})") from None


def _decode_dictionaries(table: pa.Table) -> pa.Table:
    for index, column_field in enumerate(table.schema):
        if pa.types.is_dictionary(column_field.type):
            decoded = table.column(index).cast(column_field.type.value_type)
            table = table.set_column(index, column_field.name, decoded)
    return table


def selected_feature_columns(table: pa.Table, config: PreprocessConfig) -> list[str]:
    """The feature columns to preprocess, in config order (default: every non-identifier column)."""
    names = table.schema.names
    selected = config.selected_columns or [n for n in names if n not in ID_COLUMNS]
    for column in selected:
        if column not in names:
            raise UserError(column, "selected column is not in the input" + did_you_mean(column, names))
    if not selected:
        raise UserError(str(config.preprocessing_data_path), "the input has no feature columns besides the identifiers")
    return list(selected)


def _integer_column(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    if column.null_count:
        raise UserError(name, f"has {column.null_count} missing value(s)")
    if pa.types.is_integer(column.type):
        return column.to_numpy().astype(np.int64)
    if pa.types.is_floating(column.type):
        values = column.to_numpy()
        if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
            return values.astype(np.int64)
        bad = values[~(np.isfinite(values) & (values == np.round(values)))][0]
        raise UserError(name, f"must hold integers, found {bad!r}")
    raise UserError(name, f"must hold integers, found type {column.type}")


def _check_unique_positions(sequence_ids: np.ndarray, item_positions: np.ndarray) -> None:
    duplicate = (sequence_ids[1:] == sequence_ids[:-1]) & (item_positions[1:] == item_positions[:-1])
    if duplicate.any():
        row = int(np.flatnonzero(duplicate)[0])
        raise UserError(
            "itemPosition",
            f"duplicate (sequenceId={sequence_ids[row]}, itemPosition={item_positions[row]}); "
            "positions must be unique per sequence",
        )


def read_input(config: PreprocessConfig) -> tuple[pa.Table, list[str]]:
    """The input restricted to identifiers + selected columns, sorted by (sequenceId, itemPosition)."""
    table = _load_file(config)
    if config.max_rows is not None:
        table = table.slice(0, config.max_rows)
    for name in ID_COLUMNS:
        if name not in table.schema.names:
            raise UserError(name, f"required column is missing from {config.preprocessing_data_path}")
    if table.num_rows == 0:
        raise UserError(str(config.preprocessing_data_path), "the input has no rows")
    selected = selected_feature_columns(table, config)
    table = _decode_dictionaries(table.select([*ID_COLUMNS, *selected]))
    sequence_ids = _integer_column(table, "sequenceId")
    item_positions = _integer_column(table, "itemPosition")
    order = np.lexsort((item_positions, sequence_ids))
    sequence_ids, item_positions = sequence_ids[order], item_positions[order]
    _check_unique_positions(sequence_ids, item_positions)
    table = table.take(pa.array(order)).drop_columns(list(ID_COLUMNS))
    table = table.add_column(0, "itemPosition", pa.array(item_positions, pa.int64()))
    table = table.add_column(0, "sequenceId", pa.array(sequence_ids, pa.int64()))
    return table, selected
