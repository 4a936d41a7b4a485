"""Model views of stored windows: which views exist, which of their targets count, and what a batch holds."""

from __future__ import annotations

import numpy as np
import torch

from sequifier.data.stored_windows import StoredWindows
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


def test_one_right_aligned_view_per_window_unless_a_stride_adds_more():
    values = np.arange(10)[None, :] + 100
    stored = to_tensors(windows(values, [0], [0], [0], [10]), {"event"})
    _, ends = training_views(stored, ViewShape(context_length=4, target_offset=1))
    assert ends.tolist() == [10]
    _, ends = training_views(stored, ViewShape(context_length=4, target_offset=1, stride=2))
    assert ends.tolist() == [10, 8, 6]
    _, ends = training_views(stored, ViewShape(context_length=4, target_offset=1, stride=1))
    assert ends.tolist() == [10, 9, 8, 7, 6, 5]


def test_views_without_a_counted_target_are_skipped():
    values = np.arange(10)[None, :] + 100
    # items 0..9; only items 8.. belong to this split: views ending at 6 or before predict nothing of it
    stored = to_tensors(windows(values, [0], [0], [8], [10]), {"event"})
    _, ends = training_views(stored, ViewShape(context_length=2, target_offset=1, stride=1))
    assert ends.tolist() == [10, 9]


def test_overlapping_stored_windows_each_give_their_view():
    values = np.stack([np.arange(0, 8), np.arange(4, 12)])
    stored = to_tensors(windows(values, [0, 4], [0, 0], [0, 0], [12, 12], sequence_ids=[5, 5]), {"event"})
    index, ends = training_views(stored, ViewShape(context_length=7, target_offset=1))
    assert index.tolist() == [0, 1]
    assert ends.tolist() == [8, 8]


def test_every_position_of_a_view_is_a_target_except_padding_and_items_outside_the_split():
    # window of 10 slots starting at item -3: slots 0..2 are padding, items 0..6 follow;
    # the split holds items 0..4 only (items 5 and 6 belong to the next split)
    values = np.array([[0, 0, 0, 10, 11, 12, 13, 14, 15, 16]])
    stored = to_tensors(windows(values, [-3], [3], [0], [5]), {"event"})
    shape = ViewShape(context_length=8, target_offset=1)
    index, ends = training_views(stored, shape)
    batch = gather_batch(stored, index, ends, shape, ("event", "amount"), ("event",))
    # input slots 1..8, target slots 2..9
    assert batch.inputs["event"].tolist() == [[0, 0, 10, 11, 12, 13, 14, 15]]
    assert batch.targets["event"].tolist() == [[0, 10, 11, 12, 13, 14, 15, 16]]
    assert batch.persistence["event"].tolist() == [[0, 0, 10, 11, 12, 13, 14, 15]]
    # slot 2 is padding, slots 3..7 are items 0..4 (counted, the first one predicted from padding only),
    # slots 8 and 9 are items 5 and 6, outside the split
    assert batch.target_valid.tolist() == [[False, True, True, True, True, True, False, False]]
    assert batch.left_pad_lengths.tolist() == [2]
    assert batch.inputs["amount"].dtype == torch.float32


def test_a_sample_marked_invalid_counts_no_target():
    values = np.stack([np.arange(1, 7), np.arange(11, 17)])
    stored = to_tensors(windows(values, [0, 0], [0, 0], [0, 0], [6, 6]), {"event"})
    shape = ViewShape(context_length=5, target_offset=1)
    index, ends = training_views(stored, shape)
    batch = gather_batch(stored, index, ends, shape, ("event",), ("event",), sample_valid=torch.tensor([True, False]))
    assert batch.target_valid.tolist() == [[True] * 5, [False] * 5]
    assert batch.left_pad_lengths is None


def test_target_offset_shifts_targets_against_inputs():
    values = np.arange(12)[None, :] + 100
    stored = to_tensors(windows(values, [0], [0], [0], [12]), {"event"})
    shape = ViewShape(context_length=4, target_offset=3)
    index, ends = training_views(stored, shape)
    batch = gather_batch(stored, index, ends, shape, ("event",), ("event",))
    assert batch.inputs["event"].tolist() == [[105, 106, 107, 108]]
    assert batch.targets["event"].tolist() == [[108, 109, 110, 111]]
    assert batch.persistence["event"].tolist() == [[105, 106, 107, 108]]
