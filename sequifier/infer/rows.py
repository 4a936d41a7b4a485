"""Which rows inference writes: the item each model output belongs to, and whether that item lies in the data.

Rows are ordered window by window, then view by view, then position. Each row is labelled by its
window (sequenceId, subsequenceId), the view's first input slot in the stored window
(windowStartOffset) and the item's itemPosition = startItemPosition + slot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sequifier.data.column_names import ROW_IDENTIFIERS
from sequifier.data.stored_windows import StoredWindows


@dataclass(frozen=True)
class Rows:
    """One entry per (window, view, position) output, flattened in output order; `keep` marks the rows written."""

    identifiers: dict[str, np.ndarray]
    keep: np.ndarray

    def written(self) -> dict[str, np.ndarray]:
        return {name: values[self.keep] for name, values in self.identifiers.items()}


def label_rows(stored: StoredWindows, starts: np.ndarray, slots: np.ndarray, inside_data_only: bool) -> Rows:
    """Rows of the views starting at `starts` whose outputs belong to `slots` ([views, positions] stored-window slots).

    With `inside_data_only`, rows for left padding and for items outside the window's split are dropped.
    """
    per_window = slots.size
    window = np.repeat(np.arange(len(stored)), per_window)
    slot = np.tile(slots.reshape(-1), len(stored))
    position = stored.start_item_positions[window] + slot
    values = (
        stored.sequence_ids[window],
        stored.subsequence_ids[window],
        np.tile(np.repeat(starts, slots.shape[1]), len(stored)),
        position,
    )
    identifiers = dict(zip(ROW_IDENTIFIERS, values))
    keep = np.ones(len(window), dtype=bool)
    if inside_data_only:
        keep = (slot >= stored.left_pad_lengths[window]) & (position >= stored.split_start_item_positions[window])
        keep &= position < stored.split_end_item_positions[window]
    return Rows(identifiers, keep)
