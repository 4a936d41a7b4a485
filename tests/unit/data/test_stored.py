"""load_split / write_split_parquet on the reference-v3 merged Parquet splits."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from data_test_helpers import REFERENCE_DIR
from sequifier.config.errors import UserError
from sequifier.data.metadata import read_metadata
from sequifier.data.stored import load_split, write_split_parquet

METADATA = read_metadata(REFERENCE_DIR / "configs" / "metadata_configs" / "events.json")
VALUE_COLUMNS = [str(offset) for offset in range(16, -1, -1)]


def split_path(split: int):
    return REFERENCE_DIR / "data" / f"events-split{split}.parquet"


def rows_of(table, column):
    """The fixture rows of one inputCol, read independently of load_split."""
    return table.filter(pc.equal(table.column("inputCol"), column))


@pytest.mark.parametrize("split", [0, 1, 2])
def test_shapes_and_dtypes(split):
    table = pq.read_table(split_path(split))
    windows = load_split(split_path(split), list(METADATA.column_data_types), METADATA.categorical_columns)
    assert len(windows) == table.num_rows // 4
    assert list(windows.columns) == ["event", "channel", "amount", "delay"]
    for name, array in windows.columns.items():
        assert array.shape == (len(windows), 17)
        assert array.dtype == (np.int64 if name in ("event", "channel") else np.float64)
    for ids in (
        windows.sequence_ids,
        windows.subsequence_ids,
        windows.start_item_positions,
        windows.left_pad_lengths,
        windows.split_start_item_positions,
        windows.split_end_item_positions,
    ):
        assert ids.dtype == np.int64 and ids.shape == (len(windows),)


@pytest.mark.parametrize("split", [0, 1, 2])
def test_values_match_rows_read_with_pyarrow(split):
    table = pq.read_table(split_path(split))
    windows = load_split(split_path(split), list(METADATA.column_data_types), METADATA.categorical_columns)
    for column in ["event", "channel", "amount", "delay"]:
        rows = rows_of(table, column)
        for index in (0, len(windows) // 2, len(windows) - 1):
            row = rows.slice(index, 1).to_pylist()[0]
            expected = [row[name] for name in VALUE_COLUMNS]
            np.testing.assert_array_equal(windows.columns[column][index], np.asarray(expected).astype(windows.columns[column].dtype))
            assert windows.sequence_ids[index] == row["sequenceId"]
            assert windows.subsequence_ids[index] == row["subsequenceId"]
            assert windows.start_item_positions[index] == row["startItemPosition"]
            assert windows.left_pad_lengths[index] == row["leftPadLength"]
            assert windows.split_start_item_positions[index] == row["splitStartItemPosition"]
            assert windows.split_end_item_positions[index] == row["splitEndItemPosition"]


def test_padding_slots_are_zero():
    windows = load_split(split_path(1), list(METADATA.column_data_types), METADATA.categorical_columns)
    slots = np.arange(17)[None, :]
    padding = slots < windows.left_pad_lengths[:, None]
    assert padding.any()
    for array in windows.columns.values():
        assert np.all(array[padding] == 0)
    assert np.all(windows.columns["event"][~padding] >= 3)


def test_only_requested_columns_are_loaded():
    windows = load_split(split_path(0), ["delay", "event"], METADATA.categorical_columns)
    assert list(windows.columns) == ["delay", "event"]


def test_write_split_parquet_round_trips(tmp_path):
    windows = load_split(split_path(0), list(METADATA.column_data_types), METADATA.categorical_columns)
    out = tmp_path / "data" / "copy.parquet"
    write_split_parquet(out, windows, ["event", "channel", "amount", "delay"])
    assert pq.read_table(out).equals(pq.read_table(split_path(0)))
    assert [p.name for p in out.parent.iterdir()] == ["copy.parquet"]


def test_missing_file_names_it(tmp_path):
    missing = tmp_path / "nope-split0.parquet"
    with pytest.raises(UserError) as error:
        load_split(missing, list(METADATA.column_data_types), METADATA.categorical_columns)
    assert error.value.where == str(missing)


def test_folder_is_not_supported_yet(tmp_path):
    with pytest.raises(UserError, match="not supported yet") as error:
        load_split(tmp_path, list(METADATA.column_data_types), METADATA.categorical_columns)
    assert error.value.where == str(tmp_path)


def test_unknown_column_names_it():
    with pytest.raises(UserError) as error:
        load_split(split_path(0), ["event", "nope"], METADATA.categorical_columns)
    assert error.value.where == "nope"


def test_not_a_stored_window_file(tmp_path):
    raw = tmp_path / "events.parquet"
    shutil.copy(REFERENCE_DIR / "data" / "events.parquet", raw)
    with pytest.raises(UserError, match="not a stored-window file") as error:
        load_split(raw, list(METADATA.column_data_types), METADATA.categorical_columns)
    assert error.value.where == str(raw)


def test_plain_string_input_col_is_accepted(tmp_path):
    table = pq.read_table(split_path(2))
    index = table.schema.get_field_index("inputCol")
    table = table.set_column(index, "inputCol", table.column("inputCol").cast("string"))
    path = tmp_path / "events-split2.parquet"
    pq.write_table(table, path)
    loaded = load_split(path, list(METADATA.column_data_types), METADATA.categorical_columns)
    expected = load_split(split_path(2), list(METADATA.column_data_types), METADATA.categorical_columns)
    for column in expected.columns:
        np.testing.assert_array_equal(loaded.columns[column], expected.columns[column])
