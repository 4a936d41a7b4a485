"""Every metadata JSON read or written is checked: types of its fields, and an id map consistent with n_classes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reference_helpers import REFERENCE_DIR

from sequifier.config.errors import UserError
from sequifier.data.fingerprint import column_meaning, id_map_meanings, values_of
from sequifier.data.folder_metadata import read_folder_metadata, write_folder_metadata
from sequifier.data.metadata import metadata_from_dict, read_metadata, write_metadata
from sequifier.preprocess.idmaps import static_id_map

METADATA = REFERENCE_DIR / "configs" / "metadata_configs" / "events.json"


def reference() -> dict:
    return json.loads(METADATA.read_text())


def with_change(path: str, value) -> dict:
    """The reference metadata with the value at dotted `path` replaced."""
    data = reference()
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = value
    return data


WRONG_TYPES = [
    ("n_classes.event", "15", "n_classes"),
    ("id_maps.event", ["e00", "e01"], "id_maps"),
    ("id_maps.event.e00", 3.5, "id_maps"),
    ("split_paths", "./data/events-split0.parquet", "split_paths"),
    ("column_data_types.event", 64, "column_data_types"),
    ("selected_columns_statistics.amount", None, "selected_columns_statistics"),
    ("selected_columns_statistics.amount.std", "wide", "selected_columns_statistics"),
    ("selected_columns_statistics.amount.std", -1.0, "selected_columns_statistics"),
    ("normalize_real_columns", "yes", "normalize_real_columns"),
    ("window_length", "17", "window_length"),
    ("window_lengths", [17, "17", 17], "window_lengths"),
    ("window_stride", 2.5, "window_stride"),
    ("split_ratios", "0.8/0.1/0.1", "split_ratios"),
    ("prediction_length", "1", "prediction_length"),
    ("special_token_ids", {"[unknown]": 7, "[other]": 1, "[mask]": 2}, "special_token_ids"),
]


@pytest.mark.parametrize("path, value, field", WRONG_TYPES, ids=[f"{c[0]}={c[1]!r}" for c in WRONG_TYPES])
def test_a_wrongly_typed_field_is_one_error_naming_the_file_and_field(path, value, field, tmp_path: Path):
    target = tmp_path / "events.json"
    target.write_text(json.dumps(with_change(path, value)))
    with pytest.raises(UserError) as error:
        read_metadata(target)
    assert error.value.where == str(target)
    assert field in error.value.problem


INCONSISTENT_MAPS = [
    ("id above n_classes", {"e99": 15}, 15, "needs at least 16"),
    ("[other] given a value's id", {"[other]": 3}, 15, "[other] must have id 1"),
    ("value on a reserved id", {"zz": 2}, 15, "reserved id 2"),
    ("shared id", {"zz": 5}, 15, "share an id"),
    ("n_classes below the reserved ids", {}, 2, "needs at least"),
]


@pytest.mark.parametrize("case", INCONSISTENT_MAPS, ids=[c[0] for c in INCONSISTENT_MAPS])
def test_an_id_map_inconsistent_with_n_classes_is_refused(case, tmp_path: Path):
    _, entries, n_classes, message = case
    data = reference()
    data["id_maps"]["event"].update(entries)
    data["n_classes"]["event"] = n_classes if entries else 2
    if not entries:
        data["id_maps"]["event"] = {"[unknown]": 0, "[other]": 1}
    target = tmp_path / "events.json"
    target.write_text(json.dumps(data))
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")) as error:
        read_metadata(target)
    assert error.value.where == str(target) and "event" in error.value.problem


def test_the_map_written_for_data_holding_other_before_this_check_is_refused(tmp_path: Path):
    """What an id map with a gap at 3 and n_classes one below its largest id (issue 16, finding 2) looked like."""
    data = reference()
    data["id_maps"]["event"] = {"[other]": 1, **{f"e{i:02d}": i + 4 for i in range(12)}, "[unknown]": 0}
    target = tmp_path / "events.json"
    target.write_text(json.dumps(data))
    with pytest.raises(UserError, match="n_classes.event is 15, but its id map needs at least 16"):
        read_metadata(target)


def test_a_static_map_may_leave_ids_unused(tmp_path: Path):
    data = reference()
    data["id_maps"]["channel"] = {"[unknown]": 0, "[other]": 1, "app": 3, "web": 7}
    data["n_classes"]["channel"] = 8
    assert metadata_from_dict(data).n_classes["channel"] == 8


@pytest.mark.parametrize(
    "text, message",
    [("[" * 100_000 + "]" * 100_000, "nested too deeply"), ("42", "JSON object"), ("{", "invalid JSON")],
    ids=["deep-nesting", "not-an-object", "not-json"],
)
def test_unreadable_metadata_is_one_error_naming_the_file(text, message, tmp_path: Path):
    target = tmp_path / "events.json"
    target.write_text(text)
    with pytest.raises(UserError, match=message) as error:
        read_metadata(target)
    assert error.value.where == str(target)


def test_metadata_that_is_not_utf8_is_one_error(tmp_path: Path):
    target = tmp_path / "events.json"
    target.write_bytes(b"\xff\xfe{garbage")
    with pytest.raises(UserError, match="cannot read"):
        read_metadata(target)


def test_inconsistent_metadata_is_never_written(tmp_path: Path):
    metadata = read_metadata(METADATA)
    metadata.n_classes["event"] = 4
    with pytest.raises(UserError, match="needs at least 15"):
        write_metadata(tmp_path / "events.json", metadata)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "entry",
    [
        {"path": "../../etc/passwd", "samples": 1},
        {"path": "shard.pt", "samples": "many"},
        {"path": "a.pt"},
        {"path": "a.pt", "samples": 1, "content_digest": 7},
    ],
    ids=["path-outside-the-folder", "samples-not-a-count", "samples-missing", "digest-not-text"],
)
def test_a_split_folder_lists_only_its_own_shards_with_counts(entry, tmp_path: Path):
    write_folder_metadata(tmp_path, 0, read_metadata(METADATA), [{"path": "a.pt", "samples": 1}])
    described = json.loads((tmp_path / "metadata.json").read_text())
    described["batch_files"] = [entry]
    (tmp_path / "metadata.json").write_text(json.dumps(described))
    with pytest.raises(UserError, match="batch_files"):
        read_folder_metadata(tmp_path)


@pytest.mark.parametrize(
    ("files", "total", "message"),
    [
        ([{"path": "a.pt", "samples": 8}, {"path": "a.pt", "samples": 8}], 16, "lists a.pt more than once"),
        ([{"path": "a.pt", "samples": 8}], 100, "total_samples is 100, but the samples of batch_files sum to 8"),
    ],
    ids=["a-shard-twice", "a-total-that-disagrees"],
)
def test_a_split_folder_lists_each_shard_once_and_counts_them_all(files, total, message, tmp_path: Path):
    write_folder_metadata(tmp_path, 0, read_metadata(METADATA), [{"path": "a.pt", "samples": 8}])
    described = json.loads((tmp_path / "metadata.json").read_text())
    described.update(batch_files=files, total_samples=total)
    (tmp_path / "metadata.json").write_text(json.dumps(described))
    with pytest.raises(UserError, match=message) as error:
        read_folder_metadata(tmp_path)
    assert error.value.where == str(tmp_path / "metadata.json")


def test_splits_aligned_for_prediction_are_refused_naming_the_field(tmp_path: Path):
    """3.x's prediction-aligned windows would be read as plain windows, leaving positions unpredicted."""
    data = with_change("prediction_aligned_splits", [1, 2])
    with pytest.raises(UserError, match=r"prediction_aligned_splits is \[1, 2\]: windows aligned for prediction"):
        metadata_from_dict(data, "events.json")


def test_a_window_length_edited_away_from_the_splits_window_lengths_is_refused(tmp_path: Path):
    data = reference()
    stored = data["window_length"]
    data["window_length"] = stored + 7
    with pytest.raises(
        UserError, match=rf"window_lengths \[{stored}, {stored}, {stored}\] disagree with window_length"
    ):
        metadata_from_dict(data, "events.json")
    del data["window_lengths"]
    assert metadata_from_dict(data).window_lengths == [stored + 7] * 3


def test_more_classes_than_a_column_can_have_are_refused(tmp_path: Path):
    data = reference()
    data["id_maps"]["channel"] = {"[unknown]": 0, "[other]": 1, "app": 3, "web": 100_000_000_000}
    data["n_classes"]["channel"] = 100_000_000_001
    with pytest.raises(UserError, match="n_classes.channel is 100000000001; a column can have at most 2147483648"):
        metadata_from_dict(data)


@pytest.mark.parametrize("value", [100_000_000_000, 2**31, 2, True, "5"])
def test_a_static_map_id_out_of_range_is_refused_naming_the_file(value, tmp_path: Path):
    path = tmp_path / "ev.json"
    path.write_text(json.dumps({"a": 3, "b": value}))
    with pytest.raises(UserError, match=f"id of 'b' must be an integer from 3 to {2**31 - 1}") as error:
        static_id_map(path)
    assert error.value.where == str(path)


def test_id_maps_of_one_meaning_in_both_tools_spellings_compare_equal():
    """3.x leaves reserved entries out of integer maps and spells booleans 0 and 1: the same ids, the same meaning."""
    ours = {"False": 3, "True": 4, "[unknown]": 0, "[other]": 1}
    assert values_of(ours) == values_of({"0": 3, "1": 4})
    assert values_of(ours) != values_of({"0": 4, "1": 3})
    assert values_of({"7": 3, "11": 4, "[unknown]": 0, "[other]": 1}) == values_of({"7": 3, "11": 4})
    assert values_of({"7": 3, "11": 4}) != values_of({"7": 3, "12": 4})


@pytest.mark.parametrize(
    "model_map, split_map",
    [
        ({"0": 3, "1": 4}, {"False": 3, "True": 4, "[unknown]": 0, "[other]": 1}),
        ({"False": 3, "True": 4, "[unknown]": 0, "[other]": 1}, {"0": 3, "1": 4}),
        ({"7": 3, "11": 4}, {"7": 3, "11": 4, "[unknown]": 0, "[other]": 1}),
    ],
)
def test_a_split_recording_a_map_of_one_meaning_in_the_other_spelling_is_the_models(model_map, split_map):
    assert column_meaning(split_map, None) in id_map_meanings(model_map)
    assert column_meaning({**split_map, next(iter(split_map)): 5}, None) not in id_map_meanings(model_map)
