"""Split methods: within_sequence item ranges, between_sequence whole sequences by seed, value_cutoff by a column."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reference_helpers import REFERENCE_PARQUET, preprocess_reference, read_json

from sequifier.config.errors import UserError
from sequifier.data.stored import load_split
from sequifier.preprocess.splitting import cutoff_values, sequence_splits, split_bounds


def preprocess(root, monkeypatch, data_file=REFERENCE_PARQUET, **changes):
    return read_json(preprocess_reference(root, monkeypatch, data_file, **changes))


def split_windows(root, metadata, columns=("event",)):
    return [load_split(root / path, list(columns), ["event", "channel"]) for path in metadata["split_paths"]]


def test_between_sequence_puts_each_sequence_in_one_split(tmp_path, monkeypatch):
    metadata = preprocess(tmp_path, monkeypatch, split_method="between_sequence")
    splits = split_windows(tmp_path, metadata)
    owners = [set(np.unique(w.sequence_ids).tolist()) for w in splits]
    assert sum(len(o) for o in owners) == 120 and set().union(*owners) == set(range(120))
    assert [len(o) for o in owners] == [100, 13, 7]  # as sequifier 3.1.1.0 splits this data with seed 1010
    for windows in splits:  # a whole sequence: its split bounds are its first and last item
        lengths = windows.split_end_item_positions - windows.split_start_item_positions
        assert np.all(windows.split_start_item_positions == 0) and np.all(lengths >= 30)


def test_between_sequence_is_deterministic_for_the_seed(tmp_path, monkeypatch):
    first = split_windows(tmp_path / "a", preprocess(tmp_path / "a", monkeypatch, split_method="between_sequence"))
    again = split_windows(
        tmp_path / "b", preprocess(tmp_path / "b", monkeypatch, split_method="between_sequence", n_cores=2)
    )
    other = split_windows(
        tmp_path / "c", preprocess(tmp_path / "c", monkeypatch, split_method="between_sequence", seed=7)
    )
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.sequence_ids, b.sequence_ids)
    assert set(first[1].sequence_ids.tolist()) != set(other[1].sequence_ids.tolist())


# Assignments sequifier 3.1.1.0 wrote for these ids, ratios and seeds (one sequence of 2 items per id).
@pytest.mark.parametrize(
    "ids, ratios, seed, expected",
    [
        pytest.param(
            range(20), (0.5, 0.5), 7, [1, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1], id="by-draw"
        ),
        pytest.param(
            range(100, 130),
            (0.1,) * 10,
            7,
            [int(c) for c in "308115708241311960868205300102"],
            id="empty-split-9-takes-the-highest-draw-of-split-0",
        ),
        pytest.param(
            [154, 235, 308, 329, 416, 426, 435],
            (0.16, 0.03, 0.81),
            6925,
            [2, 2, 1, 2, 0, 2, 2],
            id="largest-split-donates",
        ),
        pytest.param([154, 224, 226, 480], (0.46, 0.05, 0.09, 0.4), 2644, [1, 2, 0, 3], id="empty-splits-in-order"),
        pytest.param([149, 301, 406, 470], (0.4, 0.25, 0.27, 0.08), 3858, [0, 1, 3, 2], id="count-tie-larger-ratio"),
        pytest.param([169, 235, 446, 797, 798], (0.25,) * 4, 3, [0, 3, 1, 3, 2], id="full-tie-lower-index"),
        pytest.param([0, 1, 2], (0.5, 0.3, 0.2), 7, [0, 2, 1], id="as-many-sequences-as-splits"),
        pytest.param(
            range(-20, 20),
            (0.5, 0.5),
            11,
            [int(c) for c in "0110011011101011000110001000010011000011"],
            id="negative-ids",
        ),
    ],
)
def test_sequence_splits_match_3x(ids, ratios, seed, expected):
    assert sequence_splits(np.array(list(ids), dtype=np.int64), ratios, seed).tolist() == expected


def test_draw_on_a_boundary_goes_to_the_later_split():
    # 0.8534944110116185 is the draw of sequence 5 for seed 7; 3.x put sequence 5 in split 1 with it as first ratio
    splits = sequence_splits(np.arange(40), (0.8534944110116185, 1 - 0.8534944110116185), 7)
    assert splits[5] == 1


def test_draw_uses_the_first_8_bytes_of_the_hash():
    # for sequence 1013 (seed 7), 8 bytes give 0.2256006409755016 but the whole hash 0.22560064097550162;
    # 3.x put it in split 0 when the first ratio was the latter
    ids = np.append(np.arange(40), 1013)
    splits = sequence_splits(ids, (0.22560064097550162, 1 - 0.22560064097550162), 7)
    assert splits[-1] == 0


def test_between_sequence_needs_a_sequence_per_split():
    with pytest.raises(UserError, match="found 2 sequences for 3 splits"):
        sequence_splits(np.array([4, 9]), (0.8, 0.1, 0.1), 1010)


# Bounds sequifier 3.1.1.0 used for sequences of 1..10 items: floor(L * c) for every cumulative ratio c, in float64.
# 0.7 + 0.2 = 0.8999999999999999 and 0.7 + 0.2 + 0.1 = 0.9999999999999999, so the last item of such a sequence
# is in no split, and 10 * 0.8999999999999999 = 9.0 while 7 * 0.7 = 4.8999999999999995.
@pytest.mark.parametrize(
    "ratios, expected",
    [
        (
            (0.7, 0.2, 0.1),
            [
                [0, 0, 0, 0],
                [0, 1, 1, 1],
                [0, 2, 2, 2],
                [0, 2, 3, 3],
                [0, 3, 4, 4],
                [0, 4, 5, 5],
                [0, 4, 6, 6],
                [0, 5, 7, 7],
                [0, 6, 8, 8],
                [0, 7, 9, 9],
            ],
        ),
        (
            (0.5, 0.3, 0.2),
            [
                [0, 0, 0, 1],
                [0, 1, 1, 2],
                [0, 1, 2, 3],
                [0, 2, 3, 4],
                [0, 2, 4, 5],
                [0, 3, 4, 6],
                [0, 3, 5, 7],
                [0, 4, 6, 8],
                [0, 4, 7, 9],
                [0, 5, 8, 10],
            ],
        ),
        (
            (0.25,) * 4,
            [
                [0, 0, 0, 0, 1],
                [0, 0, 1, 1, 2],
                [0, 0, 1, 2, 3],
                [0, 1, 2, 3, 4],
                [0, 1, 2, 3, 5],
                [0, 1, 3, 4, 6],
                [0, 1, 3, 5, 7],
                [0, 2, 4, 6, 8],
                [0, 2, 4, 6, 9],
                [0, 2, 5, 7, 10],
            ],
        ),
    ],
)
def test_split_bounds_of_short_sequences(ratios, expected):
    assert split_bounds(np.arange(1, 11), ratios).tolist() == expected


def test_items_past_the_last_bound_are_in_no_split(tmp_path, monkeypatch):
    """One sequence of 10 items at 0.7/0.2/0.1: split 0 holds 0..6, split 1 7..8, split 2 nothing, item 9 no split."""
    table = pa.table({"sequenceId": np.zeros(10, dtype=np.int64), "itemPosition": np.arange(10), "x": np.arange(10.0)})
    data = tmp_path / "one.parquet"
    pq.write_table(table, data)
    metadata = preprocess(
        tmp_path / "p",
        monkeypatch,
        data_file=data,
        selected_columns=["x"],
        window_length=2,
        split_ratios=[0.7, 0.2, 0.1],
        normalize_real_columns=False,
    )
    first, second, third = split_windows(tmp_path / "p", metadata, columns=("x",))
    assert set(zip(first.split_start_item_positions.tolist(), first.split_end_item_positions.tolist())) == {(0, 7)}
    assert second.columns["x"].tolist() == [[7.0, 8.0]]
    assert len(third) == 0


def cutoff_table() -> pa.Table:
    """Two sequences of 10 items; `day` counts 0..9 in the first and 5..14 in the second."""
    return pa.table(
        {
            "sequenceId": np.repeat([1, 2], 10),
            "itemPosition": np.tile(np.arange(10), 2),
            "event": [f"e{i % 3}" for i in range(20)],
            "day": np.concatenate([np.arange(10), np.arange(5, 15)]).astype(np.int64),
        }
    )


def split_by_day(root, monkeypatch, table: pa.Table, cutoffs: list) -> tuple[dict, list]:
    """Preprocess `table` split at `cutoffs` of its day column into three splits: (metadata, split windows)."""
    data = root / "days.parquet"
    pq.write_table(table, data)
    metadata = preprocess(
        root / "project",
        monkeypatch,
        data_file=data,
        selected_columns=["event"],
        split_method="value_cutoff",
        split_column="day",
        split_values=cutoffs,
        window_length=3,
        split_ratios=[0.6, 0.2, 0.2],
    )
    return metadata, split_windows(root / "project", metadata)


def test_value_cutoff_lower_bound_inclusive(tmp_path, monkeypatch):
    metadata, splits = split_by_day(tmp_path, monkeypatch, cutoff_table(), [4, 10])
    assert metadata["split_column"] == "day" and metadata["split_values"] == [4, 10]
    # split 0: day < 4; split 1: 4 <= day < 10; split 2: day >= 10 (positions = day - start day)
    bounds = [
        sorted(
            set(
                zip(w.sequence_ids.tolist(), w.split_start_item_positions.tolist(), w.split_end_item_positions.tolist())
            )
        )
        for w in splits
    ]
    assert bounds == [[(1, 0, 4)], [(1, 4, 10), (2, 0, 5)], [(2, 5, 10)]]


@pytest.mark.parametrize("cutoffs", [[4, 10], [3.95, 9.5], ["4", "9.5"]])
def test_value_cutoffs_on_a_decimal_column_compare_as_numbers(cutoffs, tmp_path, monkeypatch):
    table = cutoff_table()
    day = pa.array([Decimal(value) for value in table.column("day").to_pylist()], pa.decimal128(5, 1))
    table = table.set_column(table.schema.get_field_index("day"), "day", day)
    _, splits = split_by_day(tmp_path, monkeypatch, table, cutoffs)
    starts = [sorted(set(zip(w.sequence_ids.tolist(), w.split_start_item_positions.tolist()))) for w in splits]
    assert starts == [[(1, 0)], [(1, 4), (2, 0)], [(2, 5)]]


@pytest.mark.parametrize(
    "offset, cutoffs", [(2**60, [2**60 + 4, 2**60 + 10]), (0, [3.5, 9.5])], ids=["beyond-2**53", "float-cutoffs"]
)
def test_value_cutoffs_on_int64_values_compare_exactly(offset, cutoffs, tmp_path, monkeypatch):
    """Nanosecond times stored as int64, say: a float64 resolves only steps of 256 at 2**60."""
    table = cutoff_table()
    day = pa.array(table.column("day").to_numpy() + offset, pa.int64())
    table = table.set_column(table.schema.get_field_index("day"), "day", day)
    _, splits = split_by_day(tmp_path, monkeypatch, table, cutoffs)
    starts = [sorted(set(zip(w.sequence_ids.tolist(), w.split_start_item_positions.tolist()))) for w in splits]
    assert starts == [[(1, 0)], [(1, 4), (2, 0)], [(2, 5)]]


def test_cutoffs_on_times_of_a_time_zone_need_an_offset():
    zoned = pa.timestamp("us", tz="UTC")
    assert cutoff_values(("2020-01-04 00:00:00+01:00",), "at", zoned)[0].as_py().hour == 23
    with pytest.raises(
        UserError, match="so '2020-01-04' needs its offset from UTC: write it as '2020-01-04 00:00:00Z'"
    ):
        cutoff_values(("2020-01-04",), "at", zoned)
    with pytest.raises(UserError, match="holds decimals, which are finite: inf"):
        cutoff_values((float("inf"),), "day", pa.decimal128(5, 1))


def test_value_cutoff_on_a_column_that_is_not_selected_and_unordered(tmp_path, monkeypatch):
    table = cutoff_table()
    day = table.column("day").to_numpy().copy()
    day[:10] = day[:10][::-1]  # first sequence: days 9..0, so its split-0 items are its last ones
    data = tmp_path / "days.parquet"
    pq.write_table(table.set_column(3, "day", pa.array(day)), data)
    metadata = preprocess(
        tmp_path / "project",
        monkeypatch,
        data_file=data,
        selected_columns=["event"],
        split_method="value_cutoff",
        split_column="day",
        split_values=[4.5],
        window_length=3,
        split_ratios=[0.5, 0.5],
    )
    assert list(metadata["column_data_types"]) == ["event"]
    first, second = split_windows(tmp_path / "project", metadata)
    assert first.split_start_item_positions[first.sequence_ids == 1].min() == 5
    assert second.split_end_item_positions[second.sequence_ids == 1].max() == 5


def test_within_sequence_bounds_are_floor_of_cumulative_ratios(tmp_path, monkeypatch):
    table = pa.table({"sequenceId": np.zeros(10, dtype=np.int64), "itemPosition": np.arange(10), "x": np.arange(10.0)})
    data = tmp_path / "one.parquet"
    pq.write_table(table, data)
    metadata = preprocess(
        tmp_path / "p",
        monkeypatch,
        data_file=data,
        selected_columns=["x"],
        window_length=2,
        split_ratios=[0.55, 0.25, 0.2],
        normalize_real_columns=False,
    )
    splits = split_windows(tmp_path / "p", metadata, columns=("x",))
    assert [(int(w.split_start_item_positions[0]), int(w.split_end_item_positions[0])) for w in splits] == [
        (0, 5),
        (5, 8),
        (8, 10),
    ]


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
        fit = np.concatenate([amount[s : s + int(np.floor(n * 0.8))] for s, n in zip(starts, lengths)])
    stats = metadata["selected_columns_statistics"]["amount"]
    assert stats["mean"] == pytest.approx(fit.mean(), abs=1e-9)
    assert stats["std"] == pytest.approx(fit.std(ddof=1), abs=1e-9)


@pytest.mark.parametrize(
    "all_data, id_map, split_one_codes, fitted_amounts",
    [
        (False, {"a": 3, "[unknown]": 0, "[other]": 1}, [[1, 1]], 7),
        (True, {"a": 3, "b": 4, "c": 5, "q": 6, "[unknown]": 0, "[other]": 1}, [[4, 5]], 10),
    ],
)
def test_categorical_values_are_fitted_on_the_same_rows_as_statistics(
    all_data, id_map, split_one_codes, fitted_amounts, tmp_path, monkeypatch
):
    """As in 3.x: id maps hold the values of split 0 (others become [other]), or with normalize_on_all_data the values
    of every row, even of the last item that 0.7/0.2/0.1 leaves in no split."""
    amount = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 1000], dtype=np.float64)
    table = pa.table(
        {
            "sequenceId": np.zeros(10, dtype=np.int64),
            "itemPosition": np.arange(10),
            "event": list("aaaaaaabcq"),
            "amount": amount,
        }
    )
    data = tmp_path / "one.parquet"
    pq.write_table(table, data)
    metadata = preprocess(
        tmp_path / "p",
        monkeypatch,
        data_file=data,
        selected_columns=["event", "amount"],
        window_length=2,
        split_ratios=[0.7, 0.2, 0.1],
        normalize_on_all_data=all_data,
    )
    assert metadata["id_maps"]["event"] == id_map and metadata["n_classes"]["event"] == len(id_map) + 1
    assert split_windows(tmp_path / "p", metadata)[1].columns["event"].tolist() == split_one_codes
    assert metadata["selected_columns_statistics"]["amount"]["mean"] == pytest.approx(amount[:fitted_amounts].mean())


def test_text_cutoffs_on_a_text_column_compare_as_text_and_numbers_are_refused():
    assert cutoff_values(("e1", "e5"), "event", pa.string()) == (pa.scalar("e1"), pa.scalar("e5"))
    with pytest.raises(UserError, match="would compare as text"):
        cutoff_values((1, "e5"), "event", pa.large_string())
