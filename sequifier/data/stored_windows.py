"""StoredWindows: the windows of one split as arrays, as every stored form (Parquet, CSV, pt shards) loads them.

A split read from several files is copied file by file into arrays allocated once (`filled_windows`), so
loading never holds the files' arrays and their concatenation at the same time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from sequifier.config.errors import UserError

# Parquet identifier column -> StoredWindows attribute (also the PT payload key).
IDENTIFIER_COLUMNS = {
    "sequenceId": "sequence_ids",
    "subsequenceId": "subsequence_ids",
    "startItemPosition": "start_item_positions",
    "leftPadLength": "left_pad_lengths",
    "splitStartItemPosition": "split_start_item_positions",
    "splitEndItemPosition": "split_end_item_positions",
}


@dataclass(frozen=True)
class StoredWindows:
    """Windows of one split; row n of every array is window n, slot 0 the oldest item.

    A deep column (of a depth layout) is [N, W, capacity]; `depth_masks` [N, W, capacity] per
    layout marks its valid child slots.
    """

    columns: dict[str, np.ndarray]
    sequence_ids: np.ndarray
    subsequence_ids: np.ndarray
    start_item_positions: np.ndarray
    left_pad_lengths: np.ndarray
    split_start_item_positions: np.ndarray
    split_end_item_positions: np.ndarray
    depth_masks: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.sequence_ids.shape[0])

    @property
    def width(self) -> int | None:
        """Slots per window (W); None without columns."""
        return next(iter(self.columns.values())).shape[1] if self.columns else None

    def sliced(self, start: int, stop: int) -> StoredWindows:
        """Windows start ... stop - 1."""
        part = slice(start, stop)
        return StoredWindows(
            columns={name: values[part] for name, values in self.columns.items()},
            **{attr: getattr(self, attr)[part] for attr in IDENTIFIER_COLUMNS.values()},
            depth_masks={layout: mask[part] for layout, mask in self.depth_masks.items()},
        )


def check_bookkeeping(windows: StoredWindows, where: str) -> None:
    """Every window's left padding fits the window (all of it padding: a window with nothing to predict) and the
    window starts within its split's positions."""
    width = windows.width
    if not len(windows) or width is None:
        return
    pads = windows.left_pad_lengths
    _refuse_first(where, (pads < 0) | (pads > width), pads, "leftPadLength", f"0 to {width} (windows of {width} items)")
    ends = windows.split_end_item_positions
    _refuse_first(
        where,
        windows.split_start_item_positions > ends,
        windows.split_start_item_positions,
        "splitStartItemPosition",
        "at most the window's splitEndItemPosition",
    )
    _refuse_first(
        where,
        windows.start_item_positions > ends,
        windows.start_item_positions,
        "startItemPosition",
        "at most the window's splitEndItemPosition",
    )


def check_window_length(windows: StoredWindows, path: Path, lengths: Sequence[int], metadata_path: Path) -> None:
    """The windows are as long as the metadata that describes them says (`window_length`, or one of the splits'
    `window_lengths`); else they come from another preprocess run."""
    if len(windows) and windows.width is not None and windows.width not in lengths:
        raise UserError(
            str(path),
            f"holds windows of {windows.width} items, but {metadata_path} describes windows of {lengths[0]} "
            "(window_length): the split and the metadata come from different preprocess runs; give the metadata "
            "written with the split, or preprocess it again with this one",
        )


def _refuse_first(where: str, bad: np.ndarray, values: np.ndarray, column: str, allowed: str) -> None:
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise UserError(where, f"window {row} has {column} {int(values[row])}; it must be {allowed}")


def concat_windows(parts: Sequence[StoredWindows], columns: Sequence[str], window_length: int) -> StoredWindows:
    """The windows of `parts` in order (`columns` and `window_length` shape an empty result)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return StoredWindows({c: np.zeros((0, window_length)) for c in columns}, *([empty] * len(IDENTIFIER_COLUMNS)))
    identifiers = {attr: np.concatenate([getattr(p, attr) for p in parts]) for attr in IDENTIFIER_COLUMNS.values()}
    masks = {layout: np.concatenate([p.depth_masks[layout] for p in parts]) for layout in parts[0].depth_masks}
    return StoredWindows(
        {c: np.concatenate([p.columns[c] for p in parts]) for c in columns}, **identifiers, depth_masks=masks
    )


def materialized(values: np.ndarray, dtype: np.dtype, where: str) -> np.ndarray:
    """`values` as `dtype` (the same array when it already is); ids that a narrower integer dtype cannot hold are
    refused rather than wrapped, and reals beyond a narrower float dtype's range rather than made infinite."""
    if values.dtype == dtype:
        return values
    if np.issubdtype(dtype, np.floating) and np.issubdtype(values.dtype, np.floating) and values.size:
        largest = np.finfo(dtype).max
        beyond = np.abs(values) > largest  # NaN compares False: finiteness is checked where the values are used
        if beyond.any():
            raise UserError(
                where,
                f"holds {values[beyond][0]:.4g}, beyond the {np.dtype(dtype).name} range the model computes in "
                f"(±{largest:.4g}); normalize the column when preprocessing (normalize_real_columns: true, and "
                "where it is already, normalize_on_all_data: true, which fits its statistics on every split), or "
                "rescale it",
            )
    if np.issubdtype(dtype, np.integer) and np.issubdtype(values.dtype, np.floating) and values.size:
        fractional = values != np.round(values)
        if fractional.any():
            raise UserError(where, f"holds the id {values[fractional][0].item()}; category ids are whole numbers")
    if np.issubdtype(dtype, np.integer) and values.size:
        limits = np.iinfo(dtype)
        smallest, largest = values.min(), values.max()
        if smallest < limits.min or largest > limits.max:
            raise UserError(where, f"ids {smallest} ... {largest} do not fit the vocabulary's id type {dtype}")
    return values.astype(dtype)


def filled_windows(
    parts: Iterator[StoredWindows], total: int, columns: Sequence[str], window_length: int
) -> StoredWindows:
    """The `total` windows of `parts` in order, each part copied into arrays allocated on the first one and
    dropped before the next is read."""
    filled, first = None, 0
    for part in parts:
        if filled is None:
            filled = _allocated_like(part, total)
        stop = first + len(part)
        for name, values in part.columns.items():
            filled.columns[name][first:stop] = values
        for attr in IDENTIFIER_COLUMNS.values():
            getattr(filled, attr)[first:stop] = getattr(part, attr)
        for layout, mask in part.depth_masks.items():
            filled.depth_masks[layout][first:stop] = mask
        first = stop
        del part
    return filled if filled is not None else concat_windows([], columns, window_length)


def _allocated_like(part: StoredWindows, total: int) -> StoredWindows:
    """Uninitialized arrays for `total` windows, of `part`'s dtypes and per-window shapes."""
    return StoredWindows(
        columns={name: np.empty((total, *v.shape[1:]), v.dtype) for name, v in part.columns.items()},
        **{attr: np.empty(total, np.int64) for attr in IDENTIFIER_COLUMNS.values()},
        depth_masks={layout: np.empty((total, *m.shape[1:]), m.dtype) for layout, m in part.depth_masks.items()},
    )
