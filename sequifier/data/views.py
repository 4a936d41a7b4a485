"""Model views of stored windows: which (window, end slot) pairs train, and batched gathering of them.

A view with context C and target offset k ending at slot e reads input slots [e-k-C, e-k) and
predicts target slots [e-C, e): every position the decoder produces is a target. A target counts
when it lies outside left padding, inside the window's split bounds, and its sample is not a
rank-padding repeat.

Categorical ids may rest in a narrower integer dtype than the model takes; gathering widens them to int64.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from sequifier.config.network import depth_mask_input
from sequifier.data.stored_windows import StoredWindows


@dataclass(frozen=True)
class WindowTensors:
    """Stored windows as tensors: values [N, W] per column ([N, W, capacity] for deep columns, with the
    valid-slot mask of each depth layout) plus per-window bounds [N]."""

    columns: dict[str, Tensor]
    left_pad_lengths: Tensor
    first_target_slot: Tensor
    end_target_slot: Tensor
    sequence_ids: Tensor
    subsequence_ids: Tensor
    start_item_positions: Tensor
    depth_masks: dict[str, Tensor] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return next(iter(self.columns.values())).shape[1]

    def __len__(self) -> int:
        return self.left_pad_lengths.shape[0]


def to_tensors(stored: StoredWindows, categorical: set[str]) -> WindowTensors:
    """Categorical ids in their stored integer dtype (shared, not copied), reals as float32; target bounds as
    slot indices."""
    columns = {
        name: torch.from_numpy(values if name in categorical else values.astype(np.float32, copy=False))
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
        depth_masks={layout: torch.from_numpy(mask) for layout, mask in stored.depth_masks.items()},
    )


@dataclass(frozen=True)
class ViewShape:
    """How a view sits in a stored window; `stride` None means one right-aligned view per window."""

    context_length: int
    target_offset: int
    stride: int | None = None
    support: int = 1

    @property
    def decoded_positions(self) -> int:
        """Targets per view: the decoder reads `support` states per output, so it yields C - support + 1."""
        return self.context_length - self.support + 1


def training_views(windows: WindowTensors, shape: ViewShape) -> tuple[Tensor, Tensor]:
    """(window index, end slot) of every view with at least one counted target.

    Views end at the window's last slot W and, with a stride s, also at W-s, W-2s, ... down to C+k.
    """
    lowest_end = shape.context_length + shape.target_offset
    step = shape.stride or windows.width
    ends = torch.arange(windows.width, lowest_end - 1, -step)
    window_index = torch.arange(len(windows)).repeat_interleave(len(ends))
    end_slot = ends.repeat(len(windows))
    first_decoded = end_slot - shape.decoded_positions
    first_counted = torch.maximum(first_decoded, windows.first_target_slot[window_index])
    has_target = first_counted < torch.minimum(end_slot, windows.end_target_slot[window_index])
    return window_index[has_target], end_slot[has_target]


def widened(values: Tensor) -> Tensor:
    """Ids as the int64 the model and losses take; reals as they are."""
    return values if values.is_floating_point() else values.long()


@dataclass(frozen=True)
class Batch:
    """Inputs [B, C] ([B, C, capacity] for deep columns and the depth masks, named by `depth_mask_input`);
    targets, their persistence values (the item `target_offset` before), where those are items rather than the
    window's left padding, and the counted-target mask [B, D] (D decoded positions)."""

    inputs: dict[str, Tensor]
    targets: dict[str, Tensor]
    persistence: dict[str, Tensor]
    persistence_known: Tensor
    target_valid: Tensor
    left_pad_lengths: Tensor | None


def gather_batch(
    windows: WindowTensors,
    window_index: Tensor,
    end_slot: Tensor,
    shape: ViewShape,
    input_columns: tuple[str, ...],
    target_columns: tuple[str, ...],
    sample_valid: Tensor | None = None,
) -> Batch:
    """The views' inputs and every decoded target; `sample_valid` [B] marks samples that count (not rank padding)."""
    rows = window_index[:, None]
    input_start = end_slot - shape.target_offset - shape.context_length
    input_slots = input_start[:, None] + torch.arange(shape.context_length)
    decoded = shape.decoded_positions
    target_slots = (end_slot - decoded)[:, None] + torch.arange(decoded)
    previous_slots = target_slots - shape.target_offset
    valid = (target_slots >= windows.first_target_slot[rows]) & (target_slots < windows.end_target_slot[rows])
    if sample_valid is not None:
        valid &= sample_valid[:, None]
    padding = (windows.left_pad_lengths[window_index] - input_start).clamp(min=0)
    inputs = {c: widened(windows.columns[c][rows, input_slots]) for c in input_columns}
    inputs.update({depth_mask_input(layout): mask[rows, input_slots] for layout, mask in windows.depth_masks.items()})
    return Batch(
        inputs=inputs,
        targets={c: widened(windows.columns[c][rows, target_slots]) for c in target_columns},
        persistence={c: widened(windows.columns[c][rows, previous_slots]) for c in target_columns},
        persistence_known=previous_slots >= windows.left_pad_lengths[rows],
        target_valid=valid,
        left_pad_lengths=padding if bool(padding.any()) else None,
    )
