"""Turning model outputs into decoded prediction tables and writing them atomically."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from sequifier.data.metadata import denormalize_values
from sequifier.data.stored import StoredWindows


def decode_predictions(outputs: dict[str, np.ndarray], stored: StoredWindows, contract: dict) -> pa.Table:
    """One row per (window, predicted position): identifiers, then each target decoded.

    Categories become their raw values; reals are de-normalized with the recorded statistics.
    """
    width = next(iter(stored.columns.values())).shape[1]
    length = contract["prediction_length"]
    offsets = np.arange(length) - (length - 1)
    last_item = stored.start_item_positions + width - 1 + contract["target_offset"]
    columns = {
        "sequenceId": np.repeat(stored.sequence_ids, length),
        "subsequenceId": np.repeat(stored.subsequence_ids, length),
        "itemPosition": (last_item[:, None] + offsets[None, :]).reshape(-1),
    }
    for target in contract["target_columns"]:
        out = outputs[target]
        description = contract["columns"][target]
        if description["kind"] == "categorical":
            ids = np.asarray(contract["class_ids"][target])[out.argmax(axis=-1)].reshape(-1)
            names = np.full(description["n_classes"], "[other]", dtype=object)
            for value, i in description["id_map"].items():
                names[i] = value
            columns[target] = names[ids]
        else:
            values = out.reshape(-1).astype(np.float64)
            statistics = description.get("statistics")
            if statistics:
                values = denormalize_values(values, statistics)
            columns[target] = values
    return pa.table(columns)


def write_predictions(table: pa.Table, path: Path, write_format: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    if write_format == "csv":
        pacsv.write_csv(table, temporary)
    else:
        pq.write_table(table, temporary)
    os.replace(temporary, path)
