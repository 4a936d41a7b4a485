"""Split methods: within_sequence item ranges, between_sequence whole sequences by seed, value_cutoff by a column."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_test_helpers import REFERENCE_PARQUET, preprocess_reference, read_json
from sequifier.data.preprocess.splitting import sequence_splits
from sequifier.data.stored import load_split



def preprocess(root, monkeypatch, data_file=REFERENCE_PARQUET, **changes):
    return read_json(preprocess_reference(root, monkeypatch, data_file, **changes))


def split_windows(root, metadata, columns=("event",)):
    return [load_split(root / path, list(columns), ["event", "channel"]) for path in metadata["split_paths"]]


def test_between_sequence_puts_each_sequence_in_one_split(tmp_path, monkeypatch):
    metadata = preprocess(tmp_path, monkeypatch, split_method="between_sequence")
    splits = split_windows(tmp_path, metadata)
    owners = [set(np.unique(w.sequence_ids).tolist()) for w in splits]
    assert sum(len(o) for o in owners) == 120 and set().union(*owners) == set(range(120))
    assert [len(o) for o in owners] == [96, 12, 12]  # floor(120 * cumulative ratios)
    for windows in splits:  # a whole sequence: its split bounds are its first and last item
        lengths = windows.split_end_item_positions - windows.split_start_item_positions
        assert np.all(windows.split_start_item_positions == 0) and np.all(lengths >= 30)


def test_between_sequence_is_deterministic_for_the_seed(tmp_path, monkeypatch):
    first = split_windows(tmp_path / "a", preprocess(tmp_path / "a", monkeypatch, split_method="between_sequence"))
    again = split_windows(tmp_path / "b", preprocess(tmp_path / "b", monkeypatch, split_method="between_sequence", n_cores=2))
    other = split_windows(tmp_path / "c", preprocess(tmp_path / "c", monkeypatch, split_method="between_sequence", seed=7))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.sequence_ids, b.sequence_ids)
    assert set(first[1].sequence_ids.tolist()) != set(other[1].sequence_ids.tolist())


def test_sequence_splits_follow_the_permutation():
    splits = sequence_splits(10, (0.5, 0.3, 0.2), seed=3)
    order = np.random.default_rng(3).permutation(10)
    assert splits[order].tolist() == [0] * 5 + [1] * 3 + [2] * 2


def cutoff_table() -> pa.Table:
    """Two sequences of 10 items; `day` counts 0..9 in the first and 5..14 in the second."""
    return pa.table({
        "sequenceId": np.repeat([1, 2], 10),
        "itemPosition": np.tile(np.arange(10), 2),
        "event": [f"e{i % 3}" for i in range(20)],
        "day": np.concatenate([np.arange(10), np.arange(5, 15)]).astype(np.int64),
    })


def test_value_cutoff_lower_bound_inclusive(tmp_path, monkeypatch):
    data = tmp_path / "days.parquet"
    pq.write_table(cutoff_table(), data)
    metadata = preprocess(
        tmp_path / "project", monkeypatch, data_file=data, selected_columns=["event"], split_method="value_cutoff",
        split_column="day", split_values=[4, 10], window_length=3, split_ratios=[0.6, 0.2, 0.2],
    )
    assert metadata["split_column"] == "day" and metadata["split_values"] == [4, 10]
    splits = split_windows(tmp_path / "project", metadata)
    # split 0: day < 4; split 1: 4 <= day < 10; split 2: day >= 10 (positions = day - start day)
    bounds = [sorted(set(zip(w.sequence_ids.tolist(), w.split_start_item_positions.tolist(), w.split_end_item_positions.tolist())))
              for w in splits]
    assert bounds == [[(1, 0, 4)], [(1, 4, 10), (2, 0, 5)], [(2, 5, 10)]]


def test_value_cutoff_on_a_column_that_is_not_selected_and_unordered(tmp_path, monkeypatch):
    table = cutoff_table()
    day = table.column("day").to_numpy().copy()
    day[:10] = day[:10][::-1]  # first sequence: days 9..0, so its split-0 items are its last ones
    data = tmp_path / "days.parquet"
    pq.write_table(table.set_column(3, "day", pa.array(day)), data)
    metadata = preprocess(
        tmp_path / "project", monkeypatch, data_file=data, selected_columns=["event"], split_method="value_cutoff",
        split_column="day", split_values=[4.5], window_length=3, split_ratios=[0.5, 0.5],
    )
    assert list(metadata["column_data_types"]) == ["event"]
    first, second = split_windows(tmp_path / "project", metadata)
    assert first.split_start_item_positions[first.sequence_ids == 1].min() == 5
    assert second.split_end_item_positions[second.sequence_ids == 1].max() == 5


def test_within_sequence_bounds_are_floor_of_cumulative_ratios(tmp_path, monkeypatch):
    table = pa.table({"sequenceId": np.zeros(10, dtype=np.int64), "itemPosition": np.arange(10), "x": np.arange(10.0)})
    data = tmp_path / "one.parquet"
    pq.write_table(table, data)
    metadata = preprocess(tmp_path / "p", monkeypatch, data_file=data, selected_columns=["x"], window_length=2,
                          split_ratios=[0.55, 0.25, 0.2], normalize_real_columns=False)
    splits = split_windows(tmp_path / "p", metadata, columns=("x",))
    assert [(int(w.split_start_item_positions[0]), int(w.split_end_item_positions[0])) for w in splits] == [(0, 5), (5, 8), (8, 10)]


@pytest.mark.parametrize("method", ["within_sequence", "between_sequence"])
def test_statistics_are_fitted_on_split_zero(method, tmp_path, monkeypatch):
    metadata = preprocess(tmp_path, monkeypatch, split_method=method)
    raw = pq.read_table(REFERENCE_PARQUET).sort_by([("sequenceId", "ascending"), ("itemPosition", "ascending")])
    sequence_ids, amount = raw.column("sequenceId").to_numpy(), raw.column("amount").to_numpy()
    if method == "between_sequence":
        train_sequences = np.unique(split_windows(tmp_path, metadata)[0].sequence_ids)
        fit = amount[np.isin(sequence_ids, train_sequences)]
    else:
        ids, starts, lengths = np.unique(sequence_ids, return_index=True, return_counts=True)
        fit = np.concatenate([amount[s:s + int(np.floor(n * 0.8))] for s, n in zip(starts, lengths)])
    stats = metadata["selected_columns_statistics"]["amount"]
    assert stats["mean"] == pytest.approx(fit.mean(), abs=1e-9)
    assert stats["std"] == pytest.approx(fit.std(ddof=1), abs=1e-9)
