"""The data side of inference: reading a stored split and cutting each window's model context."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sequifier.config.errors import UserError
from sequifier.data.stored import StoredWindows, load_split


def stored_format(path: Path) -> str:
    """parquet, csv or pt, from a split file's suffix or a shard folder's contents."""
    if path.is_dir():
        return "pt" if any(path.glob("*.pt")) else "parquet"
    return "csv" if path.suffix.lower() == ".csv" else "parquet"


def load_windows(path: Path, contract: dict, read_format: str | None) -> StoredWindows:
    """The model's input columns of every stored window of `path` (a merged file or a shard folder)."""
    if not path.exists():
        raise UserError("data_path", f"{path} does not exist (run `sequifier preprocess` first?)")
    found = stored_format(path)
    if read_format is not None and read_format != found:
        raise UserError("read_format", f"is {read_format!r}, but {path} holds {found} data")
    categorical = {n for n, c in contract["columns"].items() if c["kind"] == "categorical"}
    stored = load_split(path, contract["input_columns"], categorical)
    if len(stored) == 0:
        raise UserError("data_path", f"{path} holds no windows")
    return stored


def model_inputs(columns: dict[str, np.ndarray], left_pad: np.ndarray, contract: dict) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The last context_length slots of every window, typed as the model expects, and their padding."""
    context = contract["context_length"]
    width = next(iter(columns.values())).shape[1]
    if width < context:
        raise UserError("data_path", f"stored windows hold {width} items, fewer than the model's context_length {context}")
    inputs = {}
    for name in contract["input_columns"]:
        values = columns[name][:, width - context :]
        kind = contract["columns"][name]["kind"]
        inputs[name] = np.ascontiguousarray(values.astype(np.int64 if kind == "categorical" else np.float32))
    padding = np.clip(left_pad - (width - context), 0, None).astype(np.int64)
    return inputs, padding


def item_positions(stored: StoredWindows, first_step: int, n_positions: int) -> np.ndarray:
    """itemPosition of every output row, [windows, positions]: `first_step` items after each window's last item, then onwards."""
    width = next(iter(stored.columns.values())).shape[1]
    last_item = stored.start_item_positions + width - 1
    return last_item[:, None] + (first_step + np.arange(n_positions))[None, :]
