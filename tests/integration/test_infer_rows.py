"""Which rows `sequifier infer` writes: those sequifier 3.x writes for the reference split and the views behind them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pytest
from conftest import REFERENCE_DIR
from infer_helpers import BUNDLE, EMBEDDING, GENERATIVE, SPLIT, export_all, infer, outputs

from sequifier.data.stored import load_split
from sequifier.data.stored_tables import write_split_parquet
from sequifier.data.stored_windows import StoredWindows

EXPECTED_ROWS = REFERENCE_DIR / "expected-infer-rows"
IDENTIFIERS = ["sequenceId", "subsequenceId", "windowStartOffset", "itemPosition"]


def _identifiers(table) -> dict[str, np.ndarray]:
    return {name: table.column(name).to_numpy() for name in IDENTIFIERS}


def _assert_same_rows(table, expected: dict[str, np.ndarray], what: str) -> None:
    assert table.column_names[:4] == IDENTIFIERS, what
    for name, values in _identifiers(table).items():
        np.testing.assert_array_equal(values, expected[name], err_msg=f"{what}: {name}")


@pytest.mark.parametrize("prediction_length", [1, 4])
def test_rows_are_the_rows_sequifier_3_writes_for_the_reference_split(tmp_path: Path, prediction_length: int):
    decoder = {"type": "linear", "prediction_length": prediction_length, "support": 1}
    export_all(tmp_path, interface={"decoder": decoder}, training={"context_length": 16})
    expected = _identifiers(pacsv.read_csv(EXPECTED_ROWS / f"prediction-length-{prediction_length}.csv"))
    embeddings_file = EXPECTED_ROWS / f"embeddings-prediction-length-{prediction_length}.csv"
    expected_embeddings = _identifiers(pacsv.read_csv(embeddings_file))
    for model in (GENERATIVE, BUNDLE):
        infer(tmp_path, model, output_probabilities=True)
        _assert_same_rows(outputs(tmp_path, "predictions", model), expected, f"{model} predictions")
        _assert_same_rows(outputs(tmp_path, "probabilities", model, "event"), expected, f"{model} probabilities")
    for model in (EMBEDDING, BUNDLE):
        infer(tmp_path, model, model_type="embedding")
        _assert_same_rows(outputs(tmp_path, "embeddings", model), expected_embeddings, f"{model} embeddings")


def _cut(stored: StoredWindows, first_slot: int, width: int) -> StoredWindows:
    """Every window cut to its slots [first_slot, first_slot + width)."""
    columns = {c: v[:, first_slot : first_slot + width] for c, v in stored.columns.items()}
    return StoredWindows(
        columns,
        stored.sequence_ids,
        stored.subsequence_ids,
        stored.start_item_positions + first_slot,
        np.maximum(stored.left_pad_lengths - first_slot, 0),
        stored.split_start_item_positions,
        stored.split_end_item_positions,
    )


def _values(table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False)


def _rows_inside_data(stored: StoredWindows, slots: list[int]) -> set[tuple[int, int, int]]:
    """(sequenceId, subsequenceId, itemPosition) of each window's `slots` that hold an item of the split."""
    rows = set()
    for w in range(len(stored)):
        for slot in slots:
            position = int(stored.start_item_positions[w]) + slot
            in_split = stored.split_start_item_positions[w] <= position < stored.split_end_item_positions[w]
            if slot >= stored.left_pad_lengths[w] and in_split:
                rows.add((int(stored.sequence_ids[w]), int(stored.subsequence_ids[w]), position))
    return rows


def test_a_window_stride_predicts_from_views_inside_longer_windows_labelled_by_their_start(tmp_path: Path):
    """Context 8 on windows of 17: the default view starts at slot 8; stride 3 adds the views at 5 and 2.

    Each view's prediction equals inference on the windows cut to the view's 9 slots (there the right-aligned view).
    """
    export_all(tmp_path)
    split = REFERENCE_DIR / "data" / "events-split1.parquet"
    stored = load_split(split, ["event", "channel", "amount"], {"event", "channel"})
    infer(tmp_path, GENERATIVE, data_path=split, window_stride=3)
    strided = outputs(tmp_path, "predictions", GENERATIVE)
    offsets = strided.column("windowStartOffset").to_numpy()
    assert set(offsets) == {5, 8} and not _rows_inside_data(stored, [10])  # the view at 2 predicts padding here
    for offset in (8, 5):
        cut = tmp_path / f"cut-{offset}.parquet"
        write_split_parquet(cut, _cut(stored, offset, 9), ["event", "channel", "amount"])
        infer(tmp_path, GENERATIVE, data_path=cut)
        single = outputs(tmp_path, "predictions", GENERATIVE)
        assert set(single.column("windowStartOffset").to_numpy()) == {0}
        view = strided.filter(offsets == offset)
        for name in ("sequenceId", "subsequenceId", "itemPosition", "event"):
            np.testing.assert_array_equal(_values(view, name), _values(single, name))
        np.testing.assert_allclose(_values(view, "amount"), _values(single, "amount"), atol=1e-4, rtol=0)
        written = set(zip(*(view.column(n).to_pylist() for n in ("sequenceId", "subsequenceId", "itemPosition"))))
        assert written == _rows_inside_data(stored, [offset + 8])
    infer(tmp_path, GENERATIVE, data_path=split)
    default = outputs(tmp_path, "predictions", GENERATIVE)
    np.testing.assert_array_equal(_values(default, "event"), _values(strided.filter(offsets == 8), "event"))


def test_rows_for_left_padding_and_other_splits_are_not_written(tmp_path: Path):
    """Four predicted positions per window on the test split, whose windows begin with padding and earlier splits."""
    export_all(tmp_path, interface={"decoder": {"type": "linear", "prediction_length": 4, "support": 1}})
    stored = load_split(SPLIT, ["event"], {"event"})
    infer(tmp_path, GENERATIVE)
    table = outputs(tmp_path, "predictions", GENERATIVE)
    written = set(zip(*(table.column(n).to_pylist() for n in ("sequenceId", "subsequenceId", "itemPosition"))))
    assert written == _rows_inside_data(stored, [13, 14, 15, 16]) and len(written) == table.num_rows < 4 * len(stored)
