"""Encoding raw values into model space and decoding model values back, by a model contract's column entries.

Categories: raw value (as its id-map string) <-> id; a raw value outside the map encodes as
`[other]`. Reals: z-scored with the recorded statistics when the data was normalized.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sequifier.data.metadata import denormalize_values, normalize_values

OTHER = "[other]"


def category_names(column: dict[str, Any], special_token_ids: dict[str, int]) -> np.ndarray:
    """Raw value of every id of a categorical column (special tokens by their names), and `[unused <id>]` for an
    id that neither names (a static id map may leave ids unused): one distinct name per id."""
    names = np.array([f"[unused {i}]" for i in range(column["n_classes"])], dtype=object)
    for name, i in special_token_ids.items():
        if i < len(names):
            names[i] = name
    for value, i in column["id_map"].items():
        names[i] = value
    return names


def class_column_names(column: dict[str, Any], special_token_ids: dict[str, int], class_ids: np.ndarray) -> list[str]:
    """The name of each class id, as predictions spell it."""
    names = category_names(column, special_token_ids)
    return [str(names[i]) for i in class_ids]


def decode_values(
    values: np.ndarray, column: dict[str, Any], special_token_ids: dict[str, int], decode_categories: bool = True
) -> np.ndarray:
    """Model values -> raw values: ids to raw values (kept as ids unless `decode_categories`), reals de-normalized."""
    if column["kind"] == "categorical":
        ids = np.asarray(values).astype(np.int64)
        return category_names(column, special_token_ids)[ids] if decode_categories else ids
    values = np.asarray(values, dtype=np.float64)
    statistics = column.get("statistics")
    return denormalize_values(values, statistics) if statistics else values


def encode_values(raw: np.ndarray, column: dict[str, Any], special_token_ids: dict[str, int]) -> np.ndarray:
    """Raw values -> model values: ids (int64) for categories, normalized float64 for reals."""
    if column["kind"] == "categorical":
        lookup = column["id_map"]
        other = lookup.get(OTHER, special_token_ids.get(OTHER, 1))
        return np.array([lookup.get(str(v), other) for v in np.asarray(raw).reshape(-1)], dtype=np.int64).reshape(
            np.shape(raw)
        )
    values = np.asarray(raw, dtype=np.float64)
    statistics = column.get("statistics")
    return normalize_values(values, statistics) if statistics else values
