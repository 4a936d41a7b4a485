"""folder_parts: a shard folder read shard by shard and regrouped into parts of a given size."""

from __future__ import annotations

import numpy as np
import pytest
from reference_helpers import REFERENCE_DIR, assert_same_windows

import sequifier.data.stored as stored
from sequifier.data.stored import file_window_counts, folder_parts, load_split
from sequifier.data.stored_windows import concat_windows

FOLDER = REFERENCE_DIR / "data" / "events_pt-split2"
COLUMNS = ["event", "amount"]


@pytest.mark.parametrize("size", [1, 3, 7, 10_000])
def test_parts_hold_the_folders_windows_in_order_each_shard_read_once(size, monkeypatch):
    opened = []
    reader = stored.windows_from_pt
    monkeypatch.setattr(stored, "windows_from_pt", lambda path, *rest: opened.append(path.name) or reader(path, *rest))
    parts = list(folder_parts(FOLDER, COLUMNS, {"event"}, size))
    total = sum(file_window_counts(FOLDER))
    assert len(file_window_counts(FOLDER)) > 1 and len(opened) == len(file_window_counts(FOLDER))
    assert [len(p) for p in parts[:-1]] == [size] * (len(parts) - 1) and 0 < len(parts[-1]) <= size
    assert sum(len(p) for p in parts) == total
    whole = load_split(FOLDER, COLUMNS, {"event"})
    assert_same_windows(concat_windows(parts, COLUMNS, whole.width), whole)
    assert parts[0].columns["event"].dtype == np.int64 and parts[0].columns["amount"].dtype == np.float64
