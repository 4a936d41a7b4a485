"""Inference output tables (predictions, probabilities, embeddings) and writing them (into staging: staged_parts.py).

Every table starts with sequenceId, subsequenceId, windowStartOffset and itemPosition (see rows.py);
rows of a window are adjacent.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from sequifier.infer.codec import class_column_names, decode_values
from sequifier.infer.rows import Rows

OUTPUT_KINDS = ("predictions", "probabilities", "embeddings")


def generative_tables(
    rows: Rows,
    values: dict[str, np.ndarray],
    probabilities: dict[str, np.ndarray],
    contract: dict,
    decode_categories: bool,
) -> dict[str, pa.Table]:
    """{"predictions": table, "probabilities/<target>": table} of the written rows.

    `values` [views, positions] per target (ids or normalized reals), `probabilities` [views, positions, classes].
    """
    ids = rows.written()
    columns = dict(ids)
    for target in contract["target_columns"]:
        chosen = values[target].reshape(-1)[rows.keep]
        column = contract["columns"][target]
        columns[target] = decode_values(chosen, column, contract["special_token_ids"], decode_categories)
    tables = {"predictions": pa.table(columns)}
    for target, shares in probabilities.items():
        flat = shares.reshape(-1, shares.shape[-1])[rows.keep]
        tables[f"probabilities/{target}"] = _probabilities_table(ids, flat, target, contract, decode_categories)
    return tables


def _probabilities_table(
    ids: dict[str, np.ndarray], probabilities: np.ndarray, target: str, contract: dict, decode_categories: bool
) -> pa.Table:
    """One column per predictable class of `target` (named by its raw value, or its id), [rows, classes] in."""
    class_ids = np.asarray(contract["class_ids"][target])
    names = [str(i) for i in class_ids]
    if decode_categories:
        names = class_column_names(contract["columns"][target], contract["special_token_ids"], class_ids)
    columns = dict(ids)
    for index, name in enumerate(names):
        columns[name] = probabilities[:, index]
    return pa.table(columns)


def embeddings_table(rows: Rows, embeddings: np.ndarray) -> pa.Table:
    """Columns "0" ... "D-1" of the final backbone states of the written rows, [views, positions, D] in."""
    flat = embeddings.reshape(-1, embeddings.shape[-1])[rows.keep]
    columns = rows.written()
    for index in range(flat.shape[1]):
        columns[str(index)] = flat[:, index]
    return pa.table(columns)


def write_table(table: pa.Table, path: Path, write_format: str) -> None:
    if write_format == "csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)
