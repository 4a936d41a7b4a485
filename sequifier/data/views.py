"""Model views of stored windows: which (window, end slot) pairs train, and batched gathering of them.

A view with context C and target offset k ending at slot e reads input slots
[e-k-C, e-k) and targets slots [e-C, e); only the last `prediction_length`
targets count, and only inside the split bounds and outside padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from sequifier.data.stored import StoredWindows


@dataclass(frozen=True)
class WindowTensors:
    """Stored windows as tensors: values [N, W] per column plus per-window bounds [N]."""

    columns: dict[str, Tensor]
    left_pad_lengths: Tensor
    first_target_slot: Tensor
    end_target_slot: Tensor
    sequence_ids: Tensor
    subsequence_ids: Tensor
    start_item_positions: Tensor

    @property
    def width(self) -> int:
        return next(iter(self.columns.values())).shape[1]

    def __len__(self) -> int:
        return self.left_pad_lengths.shape[0]


def to_tensors(stored: StoredWindows, categorical: set[str]) -> WindowTensors:
    """Categorical ids as int64, reals as float32; target bounds as slot indices."""
    columns = {
        name: torch.from_numpy(values.astype(np.int64) if name in categorical else values.astype(np.float32))
        for name, values in stored.columns.items()
    }
    start = stored.start_item_positions
    first = np.maximum(stored.left_pad_lengths, stored.split_start_item_positions - start)
    end = stored.split_end_item_positions - start
    return WindowTensors(
        columns=columns,
        left_pad_lengths=torch.from_numpy(stored.left_pad_lengths.astype(np.int64)),
        first_target_slot=torch.from_numpy(first.astype(np.int64)),
        end_target_slot=torch.from_numpy(end.astype(np.int64)),
        sequence_ids=torch.from_numpy(stored.sequence_ids.astype(np.int64)),
        subsequence_ids=torch.from_numpy(stored.subsequence_ids.astype(np.int64)),
        start_item_positions=torch.from_numpy(start.astype(np.int64)),
    )


@dataclass(frozen=True)
class ViewShape:
    context_length: int
    target_offset: int
    prediction_length: int
    stride: int


def training_views(windows: WindowTensors, shape: ViewShape) -> tuple[Tensor, Tensor]:
    """(window index, end slot) of every view with at least one counted target.

    Views end at W, W-stride, ... down to C+k. A target item reachable from two
    overlapping stored windows is kept once (first occurrence).
    """
    width = windows.width
    lowest_end = shape.context_length + shape.target_offset
    ends = torch.arange(width, lowest_end - 1, -shape.stride)
    window_index = torch.arange(len(windows)).repeat_interleave(len(ends))
    end_slot = ends.repeat(len(windows))
    last_slot = end_slot - 1
    first_counted = torch.maximum(end_slot - shape.prediction_length, windows.first_target_slot[window_index])
    has_target = first_counted < torch.minimum(end_slot, windows.end_target_slot[window_index])
    window_index, end_slot, last_slot = window_index[has_target], end_slot[has_target], last_slot[has_target]
    item = windows.start_item_positions[window_index] + last_slot
    keys = np.stack([windows.sequence_ids[window_index].numpy(), item.numpy()], axis=1)
    _, first_occurrence = np.unique(keys, axis=0, return_index=True)
    keep = torch.from_numpy(np.sort(first_occurrence))
    return window_index[keep], end_slot[keep]


@dataclass(frozen=True)
class Batch:
    inputs: dict[str, Tensor]
    targets: dict[str, Tensor]
    persistence: dict[str, Tensor]
    target_valid: Tensor
    left_pad_lengths: Tensor | None


def gather_batch(windows: WindowTensors, window_index: Tensor, end_slot: Tensor, shape: ViewShape, input_columns: tuple[str, ...], target_columns: tuple[str, ...]) -> Batch:
    """Inputs [B, C], targets and their persistence values [B, P], and the counted-target mask."""
    rows = window_index[:, None]
    input_start = end_slot - shape.target_offset - shape.context_length
    input_slots = input_start[:, None] + torch.arange(shape.context_length)
    target_slots = (end_slot - shape.prediction_length)[:, None] + torch.arange(shape.prediction_length)
    valid = (target_slots >= windows.first_target_slot[rows]) & (target_slots < windows.end_target_slot[rows])
    padding = (windows.left_pad_lengths[window_index] - input_start).clamp(min=0)
    return Batch(
        inputs={c: windows.columns[c][rows, input_slots] for c in input_columns},
        targets={c: windows.columns[c][rows, target_slots] for c in target_columns},
        persistence={c: windows.columns[c][rows, target_slots - shape.target_offset] for c in target_columns},
        target_valid=valid,
        left_pad_lengths=padding if bool(padding.any()) else None,
    )
