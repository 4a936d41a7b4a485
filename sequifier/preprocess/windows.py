"""Window construction: cut each sequence's split part into fixed-length, left-padded stored windows."""

from __future__ import annotations

import numpy as np

from sequifier.data.stored_windows import StoredWindows


def window_offsets(
    part_lengths: np.ndarray, window_length: int, stride: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(part index, index within part, first slot's offset from the part start) of every window.

    A part of L > W items gets n = ceil((L - W) / stride) + 1 windows whose starts are spread evenly
    from 0 to L - W as sequifier 3.x places them: numpy.linspace(0, L - W, n) truncated, that is
    start_j = floor(j * ((L - W) / (n - 1))) in float64 and the last start exactly L - W. Consecutive
    starts are at most `stride` apart and the last window ends at the part end. A part of L <= W items
    gets one window, left-padded (offset L - W <= 0).
    """
    lengths = part_lengths.astype(np.int64)
    overhang = np.maximum(lengths - window_length, 0)
    counts = np.where(lengths > 0, -(-overhang // stride) + 1, 0)
    part_index = np.repeat(np.arange(lengths.shape[0]), counts)
    first_window = np.cumsum(counts) - counts
    window_index = np.arange(part_index.shape[0], dtype=np.int64) - first_window[part_index]
    last_index = counts[part_index] - 1
    step = overhang[part_index] / np.maximum(last_index, 1)
    spread = np.where(window_index == last_index, overhang[part_index], np.floor(window_index * step).astype(np.int64))
    offsets = np.where(lengths[part_index] > window_length, spread, lengths[part_index] - window_length)
    return part_index, window_index, offsets


def build_split_windows(
    values: dict[str, np.ndarray],
    sequence_ids: np.ndarray,
    item_positions: np.ndarray,
    part_starts: np.ndarray,
    part_lengths: np.ndarray,
    window_length: int,
    stride: int,
    depth_masks: dict[str, np.ndarray] | None = None,
) -> StoredWindows:
    """Windows of one split from per-row encoded `values`; parts are (start row, length) per sequence.

    A row is an item; a deep column holds [capacity] values per item, and `depth_masks` its layout's
    [items, capacity] valid slots. Windows only hold items of their own part; padding slots hold 0
    (all-false masks).
    """
    part_index, window_index, offsets = window_offsets(part_lengths, window_length, stride)
    starts = part_starts[part_index]
    lengths = part_lengths[part_index]
    rows = (starts + offsets)[:, None] + np.arange(window_length, dtype=np.int64)[None, :]
    is_item = rows >= starts[:, None]
    safe_rows = np.where(is_item, rows, starts[:, None])
    left_pad = np.maximum(-offsets, 0)
    first_item_rows = starts + np.maximum(offsets, 0)
    columns = {name: _padded(column, safe_rows, is_item) for name, column in values.items()}
    masks = {layout: _padded(mask, safe_rows, is_item) for layout, mask in (depth_masks or {}).items()}
    return StoredWindows(
        columns=columns,
        sequence_ids=sequence_ids[starts].astype(np.int64),
        subsequence_ids=window_index,
        start_item_positions=item_positions[first_item_rows] - left_pad,
        left_pad_lengths=left_pad,
        split_start_item_positions=item_positions[starts].astype(np.int64),
        split_end_item_positions=item_positions[starts + lengths - 1].astype(np.int64) + 1,
        depth_masks=masks,
    )


def _padded(column: np.ndarray, rows: np.ndarray, is_item: np.ndarray) -> np.ndarray:
    """[windows, window_length, ...] values of `rows`, zero (False) where a slot holds no item."""
    inside = is_item.reshape(is_item.shape + (1,) * (column.ndim - 1))
    return np.where(inside, column[rows], 0).astype(column.dtype)
