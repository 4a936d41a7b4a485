"""Meanings of values: static id maps, reusing an earlier metadata, --randomize seeds, fragments, dtypes and nulls."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from reference_helpers import (
    REFERENCE_DIR,
    REFERENCE_PARQUET,
    make_project,
    preprocess_reference,
    read_json,
    reference_config,
)

from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.metadata import NORMALIZATION_EPSILON
from sequifier.data.stored import load_split
from sequifier.preprocess import run_preprocess

REFERENCE_METADATA = REFERENCE_DIR / "configs" / "metadata_configs" / "events.json"


def preprocess(root, monkeypatch, data_file=REFERENCE_PARQUET, randomize=False, **changes) -> dict:
    return read_json(preprocess_reference(root, monkeypatch, data_file, randomize, **changes))


def first_window_values(root, metadata, column):
    windows = load_split(root / metadata["split_paths"][0], [column], ["event", "channel"])
    return windows.columns[column]


def test_static_id_map_fixes_ids_and_sends_other_values_to_other(tmp_path, monkeypatch):
    (tmp_path / "configs" / "id_maps").mkdir(parents=True)
    (tmp_path / "configs" / "id_maps" / "event.json").write_text(json.dumps({"e01": 3, "e00": 10, "[unknown]": 0}))
    metadata = preprocess(tmp_path, monkeypatch)
    assert metadata["id_maps"]["event"] == {"e01": 3, "e00": 10, "[unknown]": 0, "[other]": 1}
    assert metadata["n_classes"]["event"] == 11
    assert metadata["id_maps"]["channel"] == read_json(REFERENCE_METADATA)["id_maps"]["channel"]
    ids = first_window_values(tmp_path, metadata, "event")
    reference = load_split(REFERENCE_DIR / "data" / "events-split0.parquet", ["event"], ["event"]).columns["event"]
    np.testing.assert_array_equal(ids, np.select([reference == 3, reference == 4, reference == 0], [10, 3, 0], 1))


def test_a_static_id_map_listing_a_value_twice_is_refused(tmp_path, monkeypatch):
    (tmp_path / "configs" / "id_maps").mkdir(parents=True)
    (tmp_path / "configs" / "id_maps" / "event.json").write_text('{"e01": 3, "e01": 7, "e00": 4}')
    with pytest.raises(UserError, match=r"event\.json: lists the value 'e01' twice; each value has one id"):
        preprocess(tmp_path, monkeypatch)


def test_a_static_id_map_beside_reused_metadata_is_not_applied_and_a_note_says_so(tmp_path, monkeypatch, capsys):
    (tmp_path / "configs" / "metadata_configs").mkdir(parents=True)
    (tmp_path / "configs" / "metadata_configs" / "events.json").write_text(REFERENCE_METADATA.read_text())
    (tmp_path / "configs" / "id_maps").mkdir(parents=True)
    (tmp_path / "configs" / "id_maps" / "event.json").write_text(json.dumps({"e01": 3, "e00": 10}))
    metadata = preprocess(tmp_path, monkeypatch, metadata_config_path="configs/metadata_configs/events.json")
    assert metadata["id_maps"]["event"] == read_json(REFERENCE_METADATA)["id_maps"]["event"]
    note = "id_maps/event.json is not applied: the reused metadata (metadata_config_path) decides event's ids"
    assert note in capsys.readouterr().err


def shifted_input(tmp_path) -> object:
    """The reference raw data with a new event value and amounts shifted by 1000."""
    table = pq.read_table(REFERENCE_PARQUET)
    events = table.column("event").to_pylist()
    events[0] = "e99"
    table = table.set_column(2, "event", pa.array(events))
    table = table.set_column(4, "amount", pa.compute.add(table.column("amount"), 1000.0))
    path = tmp_path / "later.parquet"
    pq.write_table(table, path)
    return path


def test_reused_metadata_keeps_id_maps_and_statistics(tmp_path, monkeypatch):
    (tmp_path / "configs" / "metadata_configs").mkdir(parents=True)
    (tmp_path / "configs" / "metadata_configs" / "events.json").write_text(REFERENCE_METADATA.read_text())
    metadata = preprocess(
        tmp_path,
        monkeypatch,
        data_file=shifted_input(tmp_path),
        selected_columns=None,
        metadata_config_path="configs/metadata_configs/events.json",
    )
    earlier = read_json(REFERENCE_METADATA)
    for key in ("id_maps", "n_classes", "selected_columns_statistics", "column_data_types"):
        assert metadata[key] == earlier[key], key
    assert metadata["split_paths"][0] == "./data/later-split0.parquet"
    assert first_window_values(tmp_path, metadata, "event")[0, 0] == 1  # e99 is [other]
    amount = first_window_values(tmp_path, metadata, "amount")[0, 0]
    raw = pq.read_table(tmp_path / "data" / "later.parquet").column("amount")[0].as_py()
    stats = earlier["selected_columns_statistics"]["amount"]
    assert amount == pytest.approx((raw - stats["mean"]) / (stats["std"] + NORMALIZATION_EPSILON), abs=1e-12)


def test_reused_metadata_decides_normalization(tmp_path, monkeypatch, capsys):
    earlier = read_json(REFERENCE_METADATA)
    earlier["normalize_real_columns"] = False
    (tmp_path / "configs").mkdir(parents=True)
    (tmp_path / "configs" / "old.json").write_text(json.dumps(earlier))
    metadata = preprocess(tmp_path, monkeypatch, metadata_config_path="configs/old.json")
    assert metadata["normalize_real_columns"] is False
    raw = pq.read_table(REFERENCE_PARQUET).column("amount")[0].as_py()
    assert first_window_values(tmp_path, metadata, "amount")[0, 0] == raw
    assert "note: normalize_real_columns is false in the reused " in capsys.readouterr().err


def test_reused_statistics_are_recorded_with_the_rows_they_were_fitted_on(tmp_path, monkeypatch, capsys):
    earlier = read_json(REFERENCE_METADATA)
    assert earlier["normalize_on_all_data"] is False and earlier["normalize_real_columns"] is True
    (tmp_path / "configs").mkdir(parents=True)
    (tmp_path / "configs" / "old.json").write_text(json.dumps(earlier))
    metadata = preprocess(tmp_path, monkeypatch, metadata_config_path="configs/old.json", normalize_on_all_data=True)
    assert metadata["normalize_on_all_data"] is False
    assert metadata["selected_columns_statistics"] == earlier["selected_columns_statistics"]
    err = capsys.readouterr().err
    assert "note: normalize_on_all_data is false in the reused " in err and "(the config gives true)" in err
    assert "normalize_real_columns" not in err


def test_randomize_prints_and_records_a_seed_that_reproduces_the_split(tmp_path, monkeypatch, capsys):
    metadata = preprocess(tmp_path / "a", monkeypatch, randomize=True, split_method="between_sequence")
    seed = int(re.search(r"using seed (\d+)", capsys.readouterr().err).group(1))
    assert metadata["seed"] == seed
    again = preprocess(tmp_path / "b", monkeypatch, split_method="between_sequence", seed=seed)
    assert "seed" not in again
    for path_a, path_b in zip(metadata["split_paths"], again["split_paths"]):
        a = load_split(tmp_path / "a" / path_a, ["event"], ["event"])
        b = load_split(tmp_path / "b" / path_b, ["event"], ["event"])
        np.testing.assert_array_equal(a.sequence_ids, b.sequence_ids)


def test_additional_config_paths_are_composed(tmp_path, monkeypatch):
    config = reference_config(additional_config_paths=["configs/windows.yaml"])
    del config["window_length"], config["split_ratios"]
    config_path = make_project(tmp_path, REFERENCE_PARQUET, config)
    (tmp_path / "configs" / "windows.yaml").write_text(yaml.safe_dump({"window_length": 9, "split_ratios": [0.5, 0.5]}))
    monkeypatch.chdir(tmp_path)
    metadata = read_json(run_preprocess(load_preprocess_config(config_path)))
    assert metadata["window_length"] == 9 and len(metadata["split_paths"]) == 2


def one_pt_shard(tmp_path, monkeypatch, table: pa.Table, **changes) -> tuple[dict, dict]:
    """`table` preprocessed into one split of PT shards in the project `tmp_path/p`: its metadata and first shard."""
    data = tmp_path / "small.parquet"
    pq.write_table(table, data)
    metadata = preprocess(
        tmp_path / "p",
        monkeypatch,
        data_file=data,
        selected_columns=None,
        window_length=8,
        split_ratios=[1.0],
        write_format="pt",
        merge_output=False,
        **changes,
    )
    shard = next((tmp_path / "p" / metadata["split_paths"][0]).glob("*.pt"))
    return metadata, torch.load(shard, weights_only=True)


def test_float32_reals_and_missing_categories(tmp_path, monkeypatch):
    table = pa.table(
        {
            "sequenceId": np.zeros(6, dtype=np.int64),
            "itemPosition": np.arange(6),
            "kind": ["a", None, "b", "a", None, "b"],
            "level": pa.array(np.arange(6, dtype=np.float32)),
        }
    )
    metadata, payload = one_pt_shard(tmp_path, monkeypatch, table)
    assert metadata["column_data_types"] == {"kind": "Int64", "level": "Float32"}
    assert payload["sequences"]["level"].dtype == torch.float32
    assert payload["sequences"]["kind"].tolist() == [[0, 0, 3, 0, 4, 3, 0, 4]]  # 2 padding slots, then a, null, b, ...
    assert payload["left_pad_lengths"].tolist() == [2] and payload["start_item_positions"].tolist() == [-2]


@pytest.mark.parametrize(
    "recorded, data_dtype, stored", [("Float32", np.float64, torch.float32), ("float64", np.float32, torch.float64)]
)
def test_reused_metadata_decides_the_width_reals_are_stored_in(recorded, data_dtype, stored, tmp_path, monkeypatch):
    """As 3.x keeps them: the new splits' metadata then records the reused types, which 3.x's infer compares."""
    table = pa.table(
        {
            "sequenceId": np.zeros(6, dtype=np.int64),
            "itemPosition": np.arange(6),
            "level": pa.array(np.arange(6, dtype=data_dtype)),
        }
    )
    earlier = {
        "n_classes": {},
        "id_maps": {},
        "column_data_types": {"level": recorded},
        "selected_columns_statistics": {"level": {"mean": 2.5, "std": 1.5}},
        "normalize_real_columns": True,
        "split_paths": ["./data/earlier-split0"],
        "window_length": 8,
    }
    (tmp_path / "p" / "configs").mkdir(parents=True)
    (tmp_path / "p" / "configs" / "old.json").write_text(json.dumps(earlier))
    metadata, payload = one_pt_shard(tmp_path, monkeypatch, table, metadata_config_path="configs/old.json")
    assert metadata["column_data_types"] == {"level": recorded.capitalize()}
    assert payload["sequences"]["level"].dtype == stored


def boolean_channel_input(tmp_path) -> object:
    """The reference raw data with `channel` a boolean column (web or not)."""
    table = pq.read_table(REFERENCE_PARQUET)
    web = pa.compute.equal(table.column("channel"), "web")
    path = tmp_path / "flags.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("channel"), "channel", web), path)
    return path


@pytest.mark.parametrize(
    "channel_map, warned", [({"0": 3, "1": 4}, False), ({"no": 3, "yes": 4}, True)], ids=["3x-spelling", "unknown"]
)
def test_a_reused_map_of_a_boolean_column_in_3x_spelling_is_applied(tmp_path, monkeypatch, capsys, channel_map, warned):
    earlier = read_json(REFERENCE_METADATA)
    earlier["id_maps"]["channel"] = channel_map
    earlier["n_classes"]["channel"] = 5
    (tmp_path / "configs").mkdir(parents=True)
    (tmp_path / "configs" / "old.json").write_text(json.dumps(earlier))
    data = boolean_channel_input(tmp_path)
    metadata = preprocess(tmp_path, monkeypatch, data_file=data, metadata_config_path="configs/old.json")
    ids = first_window_values(tmp_path, metadata, "channel")
    said = "warning: channel: none of its values is in the id map used" in capsys.readouterr().err
    assert said == warned
    if warned:
        assert set(np.unique(ids)) <= {0, 1}
    else:
        assert {3, 4} <= set(np.unique(ids)) <= {0, 3, 4}


def test_statistics_are_the_same_bits_whatever_the_grouping_of_the_sequences(tmp_path, monkeypatch):
    """n_cores and the output form decide the groups; the fitted statistics must not depend on them."""
    runs = [{"n_cores": 1}, {"n_cores": 2}, {"n_cores": 2, "merge_output": False, "write_format": "pt"}]
    fitted = [
        preprocess(tmp_path / f"run-{index}", monkeypatch, **changes)["selected_columns_statistics"]
        for index, changes in enumerate(runs)
    ]
    assert fitted[0] == fitted[1] == fitted[2]
    earlier = read_json(REFERENCE_METADATA)["selected_columns_statistics"]  # 3.1.1.0's, to the last digits
    for name, statistics in fitted[0].items():
        assert statistics == pytest.approx(earlier[name], rel=1e-13)


def test_a_folder_of_float16_and_float32_files_keeps_float32_reals(tmp_path, monkeypatch):
    folder = tmp_path / "input"
    folder.mkdir()
    for index, dtype in enumerate((np.float16, np.float32)):
        table = pa.table(
            {
                "sequenceId": np.full(6, index, dtype=np.int64),
                "itemPosition": np.arange(6),
                "kind": ["a", "b", "a", "b", "a", "b"],
                "level": pa.array(np.arange(6).astype(dtype)),
            }
        )
        pq.write_table(table, folder / f"part-{index}.parquet")
    metadata = preprocess(
        tmp_path / "p", monkeypatch, data_file=folder, selected_columns=None, window_length=4, split_ratios=[1.0]
    )
    assert metadata["column_data_types"] == {"kind": "Int64", "level": "Float32"}


def test_a_float16_column_is_a_categorical_column_spelled_in_its_width(tmp_path, monkeypatch):
    values = np.array([1.5, 2.5, 0.1, 1.5, -0.0, 4100.0], dtype=np.float16)
    table = pa.table(
        {"sequenceId": np.zeros(6, dtype=np.int64), "itemPosition": np.arange(6), "level": pa.array(values)}
    )
    pq.write_table(table, tmp_path / "levels.parquet")
    metadata = preprocess(
        tmp_path / "p",
        monkeypatch,
        data_file=tmp_path / "levels.parquet",
        selected_columns=None,
        categorical_columns=["level"],
        window_length=6,
        split_ratios=[1.0],
    )
    id_map = metadata["id_maps"]["level"]
    assert [name for name in id_map if not name.startswith("[")] == ["-0.0", "0.1", "1.5", "2.5", "4100.0"]
    stored = load_split(tmp_path / "p" / metadata["split_paths"][0], ["level"], ["level"]).columns["level"][0]
    assert list(stored[-6:]) == [id_map[name] for name in ["1.5", "2.5", "0.1", "1.5", "-0.0", "4100.0"]]


@pytest.mark.parametrize("first", [-0.0, 0.0])
def test_minus_zero_and_zero_get_the_same_ids_whatever_comes_first(first, tmp_path, monkeypatch):
    codes = [first, -first, 1.0, -1.0] * 2
    table = pa.table({"sequenceId": np.zeros(8, dtype=np.int64), "itemPosition": np.arange(8), "code": codes})
    pq.write_table(table, tmp_path / "codes.parquet")
    settings = dict(selected_columns=None, categorical_columns=["code"], window_length=8, split_ratios=[1.0])
    metadata = preprocess(tmp_path / "p", monkeypatch, data_file=tmp_path / "codes.parquet", **settings)
    id_map = {name: i for name, i in metadata["id_maps"]["code"].items() if not name.startswith("[")}
    assert list(id_map) == ["-1.0", "-0.0", "0.0", "1.0"] and sorted(id_map.values()) == list(id_map.values())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nans_of_other_bits_are_one_value_of_a_categorical_column(dtype, tmp_path, monkeypatch):
    with np.errstate(invalid="ignore"):
        other_nan = np.array([np.inf], dtype=dtype) - np.array([np.inf], dtype=dtype)  # x86 gives the sign bit set
    values = np.array([np.nan, 1.0, other_nan[0], 2.0, np.nan], dtype=dtype)
    assert len({v.tobytes() for v in values[np.isnan(values)]}) == 2
    table = pa.table({"sequenceId": np.zeros(5, dtype=np.int64), "itemPosition": np.arange(5), "code": values})
    pq.write_table(table, tmp_path / "codes.parquet")
    settings = dict(selected_columns=None, categorical_columns=["code"], window_length=5, split_ratios=[1.0])
    metadata = preprocess(tmp_path / "p", monkeypatch, data_file=tmp_path / "codes.parquet", **settings)
    id_map = metadata["id_maps"]["code"]
    assert [name for name in id_map if not name.startswith("[")] == ["1.0", "2.0", "nan"]
    assert metadata["n_classes"]["code"] == max(id_map.values()) + 1
    stored = load_split(tmp_path / "p" / metadata["split_paths"][0], ["code"], ["code"]).columns["code"][0]
    assert list(stored) == [id_map[name] for name in ["nan", "1.0", "nan", "2.0", "nan"]]


def test_a_categorical_column_with_no_value_at_all_is_warned_about(tmp_path, monkeypatch, capsys):
    table = pq.read_table(REFERENCE_PARQUET)
    index = table.schema.get_field_index("channel")
    path = tmp_path / "blank.parquet"
    pq.write_table(table.set_column(index, "channel", pa.nulls(len(table), pa.string())), path)
    metadata = preprocess(tmp_path, monkeypatch, data_file=path)
    assert metadata["id_maps"]["channel"] == {"[unknown]": 0, "[other]": 1}
    err = capsys.readouterr().err
    assert "warning: channel: every value is missing, so every item is [unknown]" in err
    assert "warning: event" not in err
