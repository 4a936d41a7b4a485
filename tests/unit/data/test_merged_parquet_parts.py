"""merged_parquet_parts: a merged Parquet split read a batch of rows at a time and regrouped into parts."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from reference_helpers import REFERENCE_DIR, assert_same_windows

import sequifier.data.stored_tables as stored_tables
from sequifier.config.errors import UserError
from sequifier.data.stored import load_split, merged_parquet_count, merged_parquet_parts
from sequifier.data.stored_windows import IDENTIFIER_COLUMNS, StoredWindows, concat_windows

SPLIT = REFERENCE_DIR / "data" / "events-split0.parquet"
COLUMNS = ["event", "amount"]


def _batched(monkeypatch, rows: int) -> list[int]:
    """Read `rows` rows a batch; returns the window counts of the pieces the reader yields."""
    pieces: list[int] = []
    reader = stored_tables.parquet_windows

    def recorded(path, wanted, dtypes, batch_rows=rows):
        for piece in reader(path, wanted, dtypes, rows):
            pieces.append(len(piece))
            yield piece

    monkeypatch.setattr(stored_tables, "parquet_windows", recorded)
    return pieces


@pytest.mark.parametrize("rows, size", [(5, 3), (7, 1000), (64, 10), (100_000, 7)])
def test_parts_hold_the_splits_windows_and_a_batch_holds_few_windows(rows, size, monkeypatch):
    pieces = _batched(monkeypatch, rows)
    parts = list(merged_parquet_parts(SPLIT, COLUMNS, {"event"}, size))
    whole = load_split(SPLIT, COLUMNS, {"event"})
    assert [len(p) for p in parts[:-1]] == [size] * (len(parts) - 1) and 0 < len(parts[-1]) <= size
    assert_same_windows(concat_windows(parts, COLUMNS, whole.width), whole)
    assert merged_parquet_count(SPLIT, COLUMNS) == len(whole)
    stored_columns = 4  # event, channel, amount, delay: rows of a window are adjacent, so a batch finishes its own
    assert max(pieces) <= rows // stored_columns + 1


def test_a_file_whose_windows_rows_are_apart_is_read_right(tmp_path, monkeypatch):
    table = pq.read_table(SPLIT)
    by_column = table.take(pc.sort_indices(table, [("inputCol", "ascending")]))
    pq.write_table(by_column, tmp_path / "by-column.parquet", row_group_size=50)
    _batched(monkeypatch, 16)
    parts = list(merged_parquet_parts(tmp_path / "by-column.parquet", COLUMNS, {"event"}, 1000))
    whole = load_split(SPLIT, COLUMNS, {"event"})
    read = concat_windows(parts, COLUMNS, whole.width)
    order = np.lexsort((read.subsequence_ids, read.sequence_ids))
    in_order = StoredWindows(
        {name: values[order] for name, values in read.columns.items()},
        **{attr: getattr(read, attr)[order] for attr in IDENTIFIER_COLUMNS.values()},
    )
    assert_same_windows(in_order, whole)


def test_a_bad_row_in_a_late_batch_is_named(tmp_path, monkeypatch):
    table = pq.read_table(SPLIT)
    values = table.column("0").to_pylist()
    values[-3] = None
    damaged = table.set_column(table.schema.get_field_index("0"), "0", pa.array(values, pa.float64()))
    pq.write_table(damaged, tmp_path / "late-null.parquet")
    _batched(monkeypatch, 8)
    with pytest.raises(UserError, match="column '0' has missing values"):
        list(merged_parquet_parts(tmp_path / "late-null.parquet", COLUMNS, {"event"}, 1000))


def test_a_window_without_a_row_of_a_column_is_named(tmp_path, monkeypatch):
    table = pq.read_table(SPLIT)
    last_amount = np.flatnonzero(pc.equal(table.column("inputCol"), "amount").to_numpy())[-1]
    kept = np.ones(table.num_rows, dtype=bool)
    kept[last_amount] = False
    pq.write_table(table.filter(pa.array(kept)), tmp_path / "short.parquet")
    _batched(monkeypatch, 8)
    with pytest.raises(UserError, match=r"has a row of 'event' but none of 'amount' beside it \(a row missing"):
        list(merged_parquet_parts(tmp_path / "short.parquet", COLUMNS, {"event"}, 1000))


@pytest.mark.parametrize("rows", [8, 100_000])
def test_a_repeated_row_of_a_window_is_named_by_its_window(rows, tmp_path, monkeypatch):
    table = pq.read_table(SPLIT)
    repeated = pa.concat_tables([table.slice(0, 8), table.slice(0, 1), table.slice(8)])
    pq.write_table(repeated.replace_schema_metadata(table.schema.metadata), tmp_path / "repeated.parquet")
    _batched(monkeypatch, rows)
    first = table.slice(0, 1).to_pylist()[0]
    window = f"window (sequenceId {first['sequenceId']}, subsequenceId {first['subsequenceId']})"
    with pytest.raises(UserError, match=re.escape(window)):
        list(merged_parquet_parts(tmp_path / "repeated.parquet", COLUMNS, {"event"}, 1000))


def test_a_column_not_stored_is_named_before_any_window_is_read(tmp_path):
    with pytest.raises(UserError) as refused:
        merged_parquet_count(SPLIT, ["event", "missing"])
    assert refused.value.where == "missing" and "is not stored in" in refused.value.problem
