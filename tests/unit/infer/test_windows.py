"""Model views of stored windows at inference, and the rows their outputs become, on hand-made windows."""

from __future__ import annotations

import numpy as np

from sequifier.data.stored_windows import StoredWindows
from sequifier.infer.rows import label_rows
from sequifier.infer.windows import generation_start, model_inputs, view_starts

CONTRACT = {
    "context_length": 4,
    "target_offset": 1,
    "input_columns": ["event"],
    "columns": {"event": {"kind": "categorical"}},
}


def _windows() -> StoredWindows:
    """Two windows of 8 slots holding slot number + 10 × window number.

    Window 0's split ends before its last item; window 1 begins with 5 slots of left padding.
    """
    values = np.arange(8)[None, :] + 10 * np.arange(2)[:, None]
    return StoredWindows(
        {"event": values},
        sequence_ids=np.array([7, 8]),
        subsequence_ids=np.array([0, 2]),
        start_item_positions=np.array([50, 100]),
        left_pad_lengths=np.array([0, 5]),
        split_start_item_positions=np.array([0, 100]),
        split_end_item_positions=np.array([57, 108]),
    )


def test_the_default_view_is_right_aligned_and_a_stride_adds_earlier_views():
    assert view_starts(8, CONTRACT, None).tolist() == [3]
    assert view_starts(8, CONTRACT, 2).tolist() == [1, 3]
    assert view_starts(8, CONTRACT, 1).tolist() == [0, 1, 2, 3]
    assert view_starts(5, CONTRACT, 1).tolist() == [0]
    assert generation_start(8, CONTRACT).tolist() == [4]


def test_inputs_are_the_view_slots_window_major_with_the_padding_inside_each_view():
    stored = _windows()
    inputs, padding = model_inputs(stored.columns, stored.left_pad_lengths, CONTRACT, np.array([1, 3]))
    assert inputs["event"].tolist() == [[1, 2, 3, 4], [3, 4, 5, 6], [11, 12, 13, 14], [13, 14, 15, 16]]
    assert inputs["event"].dtype == np.int64 and padding.tolist() == [0, 0, 4, 2]
    newest, _ = model_inputs(stored.columns, stored.left_pad_lengths, CONTRACT)
    assert newest["event"].tolist() == [[4, 5, 6, 7], [14, 15, 16, 17]]


def test_rows_name_window_view_start_and_item_and_drop_padding_and_other_splits():
    stored = _windows()
    starts = np.array([1, 3])
    two_positions = starts[:, None] + 3 + np.arange(2)
    rows = label_rows(stored, starts, two_positions, inside_data_only=True)
    assert rows.identifiers["itemPosition"].tolist() == [54, 55, 56, 57, 104, 105, 106, 107]
    assert rows.identifiers["windowStartOffset"].tolist() == [1, 1, 3, 3] * 2
    assert rows.identifiers["subsequenceId"].tolist() == [0] * 4 + [2] * 4
    assert rows.keep.tolist() == [True, True, True, False, False, True, True, True]
    assert rows.written()["itemPosition"].tolist() == [54, 55, 56, 105, 106, 107]
    beyond = label_rows(stored, np.array([4]), 8 + np.arange(3)[None, :], inside_data_only=False)
    assert beyond.written()["itemPosition"].tolist() == [58, 59, 60, 108, 109, 110]
