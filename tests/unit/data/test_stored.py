"""load_split / write_split_parquet on the reference-v3 splits.

Merged Parquet, PT shard folders, and the other stored forms.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
import pyarrow.parquet as pq
import pytest
from reference_helpers import IDENTIFIER_ATTRIBUTES, REFERENCE_DIR, assert_same_windows

from sequifier.config.errors import UserError
from sequifier.data.fingerprint import split_fingerprint
from sequifier.data.folder_metadata import read_folder_metadata, write_folder_metadata
from sequifier.data.metadata import read_metadata
from sequifier.data.stored import load_split
from sequifier.data.stored_tables import not_stored_windows, write_split_parquet
from sequifier.data.stored_windows import StoredWindows

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
            np.testing.assert_array_equal(
                windows.columns[column][index], np.asarray(expected).astype(windows.columns[column].dtype)
            )
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


def test_folder_without_metadata_json_names_it(tmp_path):
    with pytest.raises(UserError, match="metadata.json") as error:
        load_split(tmp_path, list(METADATA.column_data_types), METADATA.categorical_columns)
    assert error.value.where == str(tmp_path)


def pt_folder(split: int):
    return REFERENCE_DIR / "data" / f"events_pt-split{split}"


def test_pt_folder_loads_with_types_of_the_request():
    windows = load_split(pt_folder(0), ["delay", "event"], METADATA.categorical_columns)
    assert list(windows.columns) == ["delay", "event"]
    assert windows.columns["event"].dtype == np.int64 and windows.columns["delay"].dtype == np.float64
    assert len(windows) == read_folder_metadata(pt_folder(0))["total_samples"] == 310


def test_parquet_shard_folder_loads_like_the_merged_file(tmp_path):
    merged = load_split(split_path(0), list(METADATA.column_data_types), METADATA.categorical_columns)
    folder = tmp_path / "events-split0"
    folder.mkdir()
    halves = [(0, 100), (100, len(merged))]
    entries = []
    for index, (start, end) in enumerate(halves):
        part = StoredWindows(
            columns={c: v[start:end] for c, v in merged.columns.items()},
            **{attr: getattr(merged, attr)[start:end] for attr in IDENTIFIER_ATTRIBUTES},
        )
        write_split_parquet(folder / f"part-{index}.parquet", part, list(METADATA.column_data_types))
        entries.append({"path": f"part-{index}.parquet", "samples": end - start})
    write_folder_metadata(folder, 0, METADATA, entries)
    loaded = load_split(folder, list(METADATA.column_data_types), METADATA.categorical_columns)
    assert_same_windows(loaded, merged, atol=0)


def test_shard_count_mismatch_names_the_shard(tmp_path):
    folder = tmp_path / "events_pt-split0"
    shutil.copytree(pt_folder(0), folder)
    described = json.loads((folder / "metadata.json").read_text())
    described["batch_files"][0]["samples"] += 1
    described["total_samples"] += 1
    (folder / "metadata.json").write_text(json.dumps(described))
    with pytest.raises(UserError, match="holds 154 windows") as error:
        load_split(folder, ["event"], METADATA.categorical_columns)
    assert error.value.where == str(folder / described["batch_files"][0]["path"])


def test_pt_shard_without_the_column_names_it():
    with pytest.raises(UserError, match="not stored") as error:
        load_split(pt_folder(1), ["event", "weather"], METADATA.categorical_columns)
    assert error.value.where == "weather"


def test_merged_csv_split_loads_like_parquet(tmp_path):
    table = pq.read_table(split_path(2))
    path = tmp_path / "events-split2.csv"
    pv.write_csv(table, path)
    loaded = load_split(path, list(METADATA.column_data_types), METADATA.categorical_columns)
    expected = load_split(split_path(2), list(METADATA.column_data_types), METADATA.categorical_columns)
    assert_same_windows(loaded, expected, atol=1e-12)


def test_a_csv_split_whose_header_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "events-split2.csv"
    pv.write_csv(pq.read_table(split_path(2)), path)
    path.write_bytes(path.read_bytes().replace(b'"inputCol"', b'"inputCol\xe9"', 1))
    assert not_stored_windows(path) == (
        "has a column name that is not UTF-8 text (saved in another encoding); save the file with UTF-8 names"
    )
    with pytest.raises(UserError, match="column name that is not UTF-8 text") as error:
        load_split(path, list(METADATA.column_data_types), METADATA.categorical_columns)
    assert error.value.where == str(path)


def test_a_parquet_split_whose_column_name_is_not_utf8_is_named(tmp_path):
    """Arrow fails decoding such a name as it opens the file, before any schema is read."""
    path = tmp_path / "events-split2.parquet"
    table = pq.read_table(split_path(2))
    table = table.append_column("x\u00e9x", pa.array(np.zeros(table.num_rows))).replace_schema_metadata(
        table.schema.metadata
    )
    pq.write_table(table, path, store_schema=False)
    path.write_bytes(path.read_bytes().replace("x\u00e9x".encode(), b"x\xe9Yx"))
    assert "column name that is not UTF-8 text" in not_stored_windows(path)
    assert split_fingerprint(path) is None  # loading the split names the file
    with pytest.raises(UserError, match="column name that is not UTF-8 text") as error:
        load_split(path, list(METADATA.column_data_types), METADATA.categorical_columns)
    assert error.value.where == str(path)


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


def _written(tmp_path, table, name="events-split2.parquet"):
    path = tmp_path / name
    pq.write_table(table, path)
    return path


def _load(path):
    return load_split(path, list(METADATA.column_data_types), METADATA.categorical_columns)


def test_rows_sorted_by_other_columns_are_read_window_by_window(tmp_path):
    """Each column's rows are matched to their window by its identifiers, not by their order in the file."""
    table = pq.read_table(split_path(2))
    resorted = table.sort_by([("inputCol", "ascending"), ("0", "descending"), ("16", "ascending")])
    assert not resorted.column("sequenceId").equals(table.column("sequenceId"))
    loaded = _load(_written(tmp_path, resorted))
    expected = _load(split_path(2))
    order = np.lexsort((loaded.subsequence_ids, loaded.sequence_ids))
    expected_order = np.lexsort((expected.subsequence_ids, expected.sequence_ids))
    for attr in IDENTIFIER_ATTRIBUTES:
        np.testing.assert_array_equal(getattr(loaded, attr)[order], getattr(expected, attr)[expected_order])
    for column, values in expected.columns.items():
        np.testing.assert_array_equal(loaded.columns[column][order], values[expected_order], err_msg=column)


def _with_value(table, column, row, value):
    values = table.column(column).to_pylist()
    values[row] = value
    return table.set_column(
        table.schema.get_field_index(column), column, pa.array(values, table.schema.field(column).type)
    )


def _row_of(table, input_column, window):
    return int(np.flatnonzero(pc.equal(table.column("inputCol"), input_column).to_numpy())[window])


def test_rows_of_one_window_that_disagree_on_its_bookkeeping_are_refused(tmp_path):
    table = pq.read_table(split_path(2))
    row = _row_of(table, "channel", 0)
    edited = _with_value(table, "leftPadLength", row, table.column("leftPadLength")[row].as_py() + 1)
    with pytest.raises(UserError, match="disagree on leftPadLength") as error:
        _load(_written(tmp_path, edited))
    assert "'channel'" in str(error.value) and "sequenceId 0" in str(error.value)


def test_a_column_without_a_row_for_a_window_is_refused(tmp_path):
    table = pq.read_table(split_path(2))
    row = _row_of(table, "amount", 1)
    edited = _with_value(table, "sequenceId", row, 10**6)
    with pytest.raises(UserError, match="has no row for window") as error:
        _load(_written(tmp_path, edited))
    assert "'amount'" in str(error.value)


def test_two_rows_of_one_column_for_a_window_are_refused_when_rows_must_be_matched(tmp_path):
    table = pq.read_table(split_path(2))
    first, second = _row_of(table, "delay", 0), _row_of(table, "delay", 1)
    edited = _with_value(table, "sequenceId", second, table.column("sequenceId")[first].as_py())
    with pytest.raises(UserError, match="has two rows of column 'delay'"):
        _load(_written(tmp_path, edited))


@pytest.mark.parametrize("stored_id", [2.5, float("nan")])
def test_category_ids_that_are_not_whole_numbers_are_refused(tmp_path, stored_id):
    table = pq.read_table(split_path(2))
    edited = _with_value(table, "5", _row_of(table, "event", 3), stored_id)
    with pytest.raises(UserError, match="category ids are whole numbers") as error:
        _load(_written(tmp_path, edited))
    assert "column 'event'" in error.value.where
    assert f"holds the id {stored_id};" in str(error.value)  # the plain number, not numpy's repr


def test_a_header_only_csv_split_holds_no_windows(tmp_path):
    table = pq.read_table(split_path(2)).slice(0, 0)
    path = tmp_path / "empty.csv"
    pv.write_csv(table, path)
    windows = _load(path)
    assert len(windows) == 0 and windows.width == 17


@pytest.mark.parametrize("change", ["added", "removed"])
def test_value_columns_added_or_removed_after_writing_are_refused(tmp_path, change):
    """The window length a split was written with travels in its key-value metadata."""
    windows = _load(split_path(2))
    path = tmp_path / "written.parquet"
    write_split_parquet(path, windows, list(windows.columns))
    table = pq.read_table(path)
    assert len(_load(path)) == len(windows)
    if change == "added":
        table = table.append_column("17", pa.array(np.zeros(table.num_rows)))
    else:
        table = table.drop_columns(["16"])
    pq.write_table(table, path)
    with pytest.raises(UserError, match="was written with window_length 17: value columns were added or removed"):
        _load(path)


def test_a_split_path_that_is_no_regular_file_is_named_as_such():
    with pytest.raises(UserError, match="/dev/null: is not a regular file; give a split file or a shard folder"):
        load_split(Path("/dev/null"), ["event"], {"event"})


def test_a_shard_listed_but_missing_is_named(tmp_path):
    folder = tmp_path / "events_pt-split0"
    shutil.copytree(pt_folder(0), folder)
    shard = folder / json.loads((folder / "metadata.json").read_text())["batch_files"][1]["path"]
    shard.unlink()
    with pytest.raises(UserError) as error:
        load_split(folder, ["event"], METADATA.categorical_columns)
    assert error.value.where == str(shard)
    assert (
        error.value.problem == f"is listed in {folder / 'metadata.json'} but does not exist; preprocess the split again"
    )
