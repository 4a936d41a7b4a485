"""Inference output tables (predictions, probabilities, embeddings) and writing them atomically.

Every table starts with sequenceId, subsequenceId and itemPosition; a window contributes one
row per predicted position (or generated step), rows of a window adjacent.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from sequifier.data.stored import StoredWindows
from sequifier.infer.codec import category_names, decode_values

OUTPUT_KINDS = ("predictions", "probabilities", "embeddings")


def identifiers(stored: StoredWindows, positions: np.ndarray) -> dict[str, np.ndarray]:
    """Identifier columns for `positions` ([windows, per-window rows] itemPositions)."""
    per_window = positions.shape[1]
    return {
        "sequenceId": np.repeat(stored.sequence_ids, per_window),
        "subsequenceId": np.repeat(stored.subsequence_ids, per_window),
        "itemPosition": positions.reshape(-1),
    }


def predictions_table(ids: dict[str, np.ndarray], chosen: dict[str, np.ndarray], contract: dict, decode_categories: bool) -> pa.Table:
    """Chosen target values ([windows, positions] ids or normalized reals) decoded into one column per target."""
    columns = dict(ids)
    for target in contract["target_columns"]:
        columns[target] = decode_values(chosen[target].reshape(-1), contract["columns"][target], contract["special_token_ids"], decode_categories)
    return pa.table(columns)


def probabilities_table(ids: dict[str, np.ndarray], probabilities: np.ndarray, target: str, contract: dict, decode_categories: bool) -> pa.Table:
    """One column per predictable class of `target` (named by its raw value, or its id), [windows, positions, classes] in."""
    class_ids = np.asarray(contract["class_ids"][target])
    names = category_names(contract["columns"][target], contract["special_token_ids"])[class_ids] if decode_categories else class_ids
    flat = probabilities.reshape(-1, len(class_ids))
    columns = dict(ids)
    for index, name in enumerate(names):
        columns[str(name)] = flat[:, index]
    return pa.table(columns)


def embeddings_table(ids: dict[str, np.ndarray], embeddings: np.ndarray) -> pa.Table:
    """Columns "0" ... "D-1" of the final backbone states, [windows, positions, D] in."""
    flat = embeddings.reshape(-1, embeddings.shape[-1])
    columns = dict(ids)
    for index in range(flat.shape[1]):
        columns[str(index)] = flat[:, index]
    return pa.table(columns)


def clear_parts(folder: Path) -> None:
    """Remove part files an earlier run left, so a folder holds one run's output."""
    for old in folder.glob("part-*.*"):
        if old.suffix in (".csv", ".parquet"):
            old.unlink()


def write_table(table: pa.Table, path: Path, write_format: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        if write_format == "csv":
            pacsv.write_csv(table, temporary)
        else:
            pq.write_table(table, temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
