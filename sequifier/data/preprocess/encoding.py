"""Encoding feature values: categorical id maps (reserved ids first) and z-score statistics for reals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.config.errors import UserError
from sequifier.data.metadata import CATEGORICAL_TYPE, SPECIAL_TOKEN_IDS, normalize_values

FIRST_VALUE_ID = len(SPECIAL_TOKEN_IDS)
# Reserved ids written into every id map ([mask] is only in special_token_ids and n_classes).
ID_MAP_RESERVED = {"[unknown]": SPECIAL_TOKEN_IDS["[unknown]"], "[other]": SPECIAL_TOKEN_IDS["[other]"]}


@dataclass(frozen=True)
class EncodedColumns:
    """Per-row encoded values (int64 ids / float64 reals) with the maps and statistics that made them."""

    values: dict[str, np.ndarray]
    id_maps: dict[str, dict[str, int]]
    statistics: dict[str, dict[str, float]]

    @property
    def n_classes(self) -> dict[str, int]:
        return {column: len(id_map) + 1 for column, id_map in self.id_maps.items()}


def sorted_unique_values(column: pa.ChunkedArray) -> pa.Array:
    uniques = pc.unique(column).drop_null()
    return uniques.take(pc.array_sort_indices(uniques))


def id_map_for(uniques: pa.Array) -> dict[str, int]:
    """Raw value (as string) -> id, data values from 3 in sorted order, then the reserved ids."""
    id_map = {str(value): index + FIRST_VALUE_ID for index, value in enumerate(uniques.to_pylist())}
    id_map.update(ID_MAP_RESERVED)
    return id_map


def encode_categorical(column: pa.ChunkedArray, uniques: pa.Array) -> np.ndarray:
    """Ids per row; missing values get [unknown]."""
    positions = pc.index_in(column, value_set=uniques)
    unknown = SPECIAL_TOKEN_IDS["[unknown]"] - FIRST_VALUE_ID
    return pc.fill_null(positions, unknown).to_numpy().astype(np.int64) + FIRST_VALUE_ID


def real_values(table: pa.Table, name: str) -> np.ndarray:
    """float64 values of a real column; missing, NaN or infinite values are errors."""
    column = table.column(name)
    if column.null_count:
        raise UserError(name, f"real column has {column.null_count} missing value(s)")
    values = column.cast(pa.float64()).to_numpy()
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        sequence_id = table.column("sequenceId")[row].as_py()
        item_position = table.column("itemPosition")[row].as_py()
        raise UserError(
            name,
            f"real column has {int(bad.sum())} NaN/infinite value(s), "
            f"first at sequenceId={sequence_id}, itemPosition={item_position}",
        )
    return values


def fit_statistics(name: str, values: np.ndarray) -> dict[str, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single value)."""
    if values.size == 0:
        raise UserError(name, "no values in split 0 to fit normalization on (set normalize_on_all_data: true)")
    std = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return {"mean": float(values.mean()), "std": std}


def encode_columns(
    table: pa.Table, column_types: dict[str, str], fit_rows: np.ndarray, normalize: bool
) -> EncodedColumns:
    """Encode every selected column; statistics are fitted on the rows where `fit_rows` is true."""
    values: dict[str, np.ndarray] = {}
    id_maps: dict[str, dict[str, int]] = {}
    statistics: dict[str, dict[str, float]] = {}
    for name, column_type in column_types.items():
        if column_type == CATEGORICAL_TYPE:
            uniques = sorted_unique_values(table.column(name))
            id_maps[name] = id_map_for(uniques)
            values[name] = encode_categorical(table.column(name), uniques)
        else:
            raw = real_values(table, name)
            statistics[name] = fit_statistics(name, raw[fit_rows])
            values[name] = normalize_values(raw, statistics[name]) if normalize else raw
    return EncodedColumns(values=values, id_maps=id_maps, statistics=statistics)
