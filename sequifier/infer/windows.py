"""The data side of inference: reading a stored split a part at a time and cutting the model views of each window.

A view with context C and target offset k starting at slot s reads input slots [s, s+C); its
decoder outputs of the last P = prediction_length positions predict slots [s+k+C-P, s+k+C).
The default view is right-aligned (s = W-k-C, predicting the window's last P slots); a
`window_stride` adds the views that end stride, 2·stride, ... slots earlier.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from sequifier.config.errors import UserError, missing_folder
from sequifier.config.network import depth_mask_input
from sequifier.data.stored import (
    file_window_counts,
    folder_parts,
    load_split,
    merged_parquet_count,
    merged_parquet_parts,
)
from sequifier.data.stored_windows import StoredWindows
from sequifier.export.contract import graph_inputs


def stored_format(path: Path) -> str:
    """parquet, csv or pt, from a split file's suffix or a shard folder's contents."""
    if path.is_dir():
        return "pt" if any(path.glob("*.pt")) else "parquet"
    return "csv" if path.suffix.lower() == ".csv" else "parquet"


@dataclass(frozen=True)
class StoredSplit:
    """The split infer reads: its window count, and its windows a part at a time.

    A merged CSV file is read whole once; a shard folder is read shard by shard for each pass, holding at most one
    shard and one part, and a merged Parquet file a batch of rows at a time, so memory does not grow with the split.
    """

    path: Path
    contract: dict
    total: int
    whole: StoredWindows | None

    def __len__(self) -> int:
        return self.total

    def parts(self, size: int) -> Iterator[StoredWindows]:
        if self.whole is not None:
            yield from (self.whole.sliced(start, start + size) for start in range(0, self.total, size))
            return
        read = folder_parts if self.path.is_dir() else merged_parquet_parts
        for part in read(self.path, self.contract["input_columns"], _categorical(self.contract), size):
            check_windows(part, self.path, self.contract)
            yield part


def open_split(path: Path, contract: dict, read_format: str | None, named_by: str = "data_path") -> StoredSplit:
    """The model's input columns of the stored windows of `path` (a merged file or a shard folder); `named_by`
    says where the path came from (the data_path field, or the metadata whose last split it is)."""
    if not path.exists():
        raise UserError(named_by, f"{path} does not exist{missing_folder(path)} (run `sequifier preprocess` first?)")
    if path.is_file() and path.suffix.lower() == ".pt":
        raise UserError(
            named_by, f"{path} is one PT shard; PT shards are read as their split folder (give {path.parent})"
        )
    found = stored_format(path)
    if read_format is not None and read_format != found:
        how = "by its suffix (.csv, .parquet)" if path.is_file() else "by the shards it holds"
        raise UserError("read_format", f"is {read_format!r}, but {path} is read as {found} {how}")
    if path.is_dir():
        split = StoredSplit(path, contract, sum(file_window_counts(path)), None)
    elif found == "parquet":
        split = StoredSplit(path, contract, merged_parquet_count(path, contract["input_columns"]), None)
    else:
        whole = load_split(path, contract["input_columns"], _categorical(contract))
        check_windows(whole, path, contract)
        split = StoredSplit(path, contract, len(whole), whole)
    if len(split) == 0:
        raise UserError(named_by, f"{path} holds no windows")
    return split


def _categorical(contract: dict) -> set[str]:
    return {n for n, c in contract["columns"].items() if c["kind"] == "categorical"}


def check_windows(stored: StoredWindows, path: Path, contract: dict) -> None:
    """The windows are wide enough for the model's views and hold the depth layouts it reads."""
    width = stored.width
    needed = contract["context_length"] + contract["target_offset"]
    if len(stored) and width < needed:
        raise UserError(
            "data_path",
            f"the stored windows of {path} hold {width} items, fewer than the model's context_length + "
            f"target_offset ({contract['context_length']} + {contract['target_offset']})",
        )
    for layout, definition in contract.get("depth_layouts", {}).items():
        mask = stored.depth_masks.get(layout)
        if mask is None or mask.shape[2] != definition["context_length"]:
            found = "no such layout" if mask is None else f"capacity {mask.shape[2]}"
            raise UserError(
                "data_path",
                f"the model reads depth layout {layout!r} of capacity {definition['context_length']}, "
                f"but {path} holds {found}",
            )


def view_starts(width: int, contract: dict, window_stride: int | None) -> np.ndarray:
    """First input slot of each view of a stored window, oldest view first."""
    right_aligned = width - contract["target_offset"] - contract["context_length"]
    return np.arange(right_aligned, -1, -(window_stride or width))[::-1]


def generation_start(width: int, contract: dict) -> np.ndarray:
    """Autoregression reads the window's newest C items and continues after them."""
    return np.array([width - contract["context_length"]])


def window_arrays(stored: StoredWindows) -> dict[str, np.ndarray]:
    """Every array a model may read from the windows: the columns and, by input name, the depth masks."""
    return {**stored.columns, **{depth_mask_input(layout): mask for layout, mask in stored.depth_masks.items()}}


def model_inputs(
    arrays: dict[str, np.ndarray], left_pad: np.ndarray, contract: dict, starts: np.ndarray | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Inputs of every (window, view starting at `starts`) pair, window-major, typed for the model, and their padding.

    `arrays` holds the model's inputs by name (`window_arrays`); deep columns and depth masks keep their
    capacity axis. Without `starts`, each window's newest context_length slots.
    """
    context = contract["context_length"]
    width = next(iter(arrays.values())).shape[1]
    if starts is None:
        starts = generation_start(width, contract)
    slots = starts[:, None] + np.arange(context)
    types = {"categorical": np.int64, "real": np.float32}
    inputs = {}
    for name in graph_inputs(contract):
        values = arrays[name][:, slots]
        values = values.reshape(-1, context, *values.shape[3:])
        kind = contract["columns"][name]["kind"] if name in contract["columns"] else None
        inputs[name] = np.ascontiguousarray(values.astype(types[kind]) if kind else values)
    padding = np.clip(left_pad[:, None] - starts[None, :], 0, None).reshape(-1).astype(np.int64)
    return inputs, padding
