"""Training views of stored windows: which views exist and what a batch holds."""

from __future__ import annotations

import numpy as np
import torch

from sequifier.data.stored import StoredWindows
from sequifier.data.views import ViewShape, gather_batch, to_tensors, training_views


def windows(values: np.ndarray, starts, pads, split_starts, split_ends, sequence_ids=None) -> StoredWindows:
    n = values.shape[0]
    return StoredWindows(
        columns={"event": values.astype(np.int64), "amount": values.astype(np.float64) / 10},
        sequence_ids=np.asarray(sequence_ids if sequence_ids is not None else np.arange(n), dtype=np.int64),
        subsequence_ids=np.zeros(n, dtype=np.int64),
        start_item_positions=np.asarray(starts, dtype=np.int64),
        left_pad_lengths=np.asarray(pads, dtype=np.int64),
        split_start_item_positions=np.asarray(split_starts, dtype=np.int64),
        split_end_item_positions=np.asarray(split_ends, dtype=np.int64),
    )


def test_views_step_back_by_the_stride_and_skip_targets_outside_the_split():
    values = np.arange(10)[None, :] + 100
    # items 0..9; only items 6.. belong to this split
    stored = to_tensors(windows(values, [0], [0], [6], [10]), {"event"})
    index, ends = training_views(stored, ViewShape(context_length=4, target_offset=1, prediction_length=1, stride=1))
    assert sorted(ends.tolist()) == [7, 8, 9, 10]
    index, ends = training_views(stored, ViewShape(4, 1, 1, stride=2))
    assert sorted(ends.tolist()) == [8, 10]


def test_overlapping_windows_keep_each_target_item_once():
    values = np.stack([np.arange(0, 8), np.arange(4, 12)])
    stored = to_tensors(windows(values, [0, 4], [0, 0], [0, 0], [12, 12], sequence_ids=[5, 5]), {"event"})
    index, ends = training_views(stored, ViewShape(4, 1, 1, 1))
    targets = (stored.start_item_positions[index] + ends - 1).tolist()
    assert sorted(targets) == list(range(4, 12))


def test_batch_slices_inputs_targets_and_padding():
    values = np.array([[0, 0, 0, 13, 14, 15, 16, 17]])
    stored = to_tensors(windows(values, [-3], [3], [0], [5]), {"event"})
    shape = ViewShape(context_length=4, target_offset=1, prediction_length=2, stride=1)
    batch = gather_batch(stored, torch.tensor([0]), torch.tensor([6]), shape, ("event", "amount"), ("event",))
    assert batch.inputs["event"].tolist() == [[0, 0, 13, 14]]
    assert batch.targets["event"].tolist() == [[14, 15]]
    assert batch.persistence["event"].tolist() == [[13, 14]]
    assert batch.target_valid.tolist() == [[True, True]]
    assert batch.left_pad_lengths.tolist() == [2]
    assert batch.inputs["amount"].dtype == torch.float32
