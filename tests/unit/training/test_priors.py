"""Decoder priors are the smoothed distribution of the in-split training targets."""

from __future__ import annotations

import math

import numpy as np
import torch

from sequifier.data.stored_windows import StoredWindows
from sequifier.data.views import to_tensors
from sequifier.training.priors import class_counts, in_split_values, log_frequencies


def test_only_in_split_items_count_and_every_predictable_class_keeps_some_probability():
    # two windows of 5 slots: the first is left-padded by 2, the second's last item belongs to the next split
    values = np.array([[0, 0, 3, 4, 4], [4, 5, 5, 3, 6]])
    stored = StoredWindows(
        columns={"event": values},
        sequence_ids=np.array([0, 1]),
        subsequence_ids=np.zeros(2, dtype=np.int64),
        start_item_positions=np.array([-2, 10]),
        left_pad_lengths=np.array([2, 0]),
        split_start_item_positions=np.array([0, 10]),
        split_end_item_positions=np.array([3, 14]),
    )
    windows = to_tensors(stored, {"event"})
    seen = in_split_values(windows, "event")
    assert sorted(seen.tolist()) == [3, 3, 4, 4, 4, 5, 5]
    class_ids = torch.tensor([1, 3, 4, 5, 6])  # [other] and the data values
    prior = log_frequencies(class_counts(seen, class_ids))
    counts = [0, 2, 3, 2, 0]
    expected = [math.log((c + 1) / (7 + 5)) for c in counts]
    torch.testing.assert_close(prior, torch.tensor(expected))
    assert math.isclose(float(prior.exp().sum()), 1.0, rel_tol=1e-6)
