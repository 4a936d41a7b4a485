"""Preprocess options: column selection and typing, normalization, stride, max_rows, config resolution."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from reference_helpers import REFERENCE_DIR, REFERENCE_PARQUET, make_project, preprocess_reference, reference_config

from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.metadata import read_metadata
from sequifier.data.stored import load_split


def preprocess(tmp_path, monkeypatch, data_file=REFERENCE_PARQUET, **changes):
    return read_metadata(preprocess_reference(tmp_path, monkeypatch, data_file, **changes))


def synthetic_parquet(tmp_path, columns: dict) -> object:
    n_items = len(next(iter(columns.values())))
    table = pa.table({"sequenceId": np.zeros(n_items, dtype=np.int64), "itemPosition": np.arange(n_items), **columns})
    path = tmp_path / "synthetic.parquet"
    pq.write_table(table, path)
    return path


def test_selected_subset_matches_reference_rows(tmp_path, monkeypatch):
    metadata = preprocess(tmp_path, monkeypatch, selected_columns=["delay", "channel"])
    assert metadata.column_data_types == {"delay": "Float64", "channel": "Int64"}
    actual = pq.read_table(tmp_path / "data" / "events-split0.parquet")
    expected = pq.read_table(REFERENCE_DIR / "data" / "events-split0.parquet")
    assert actual.column("inputCol").to_pylist()[:4] == ["delay", "channel", "delay", "channel"]
    for column in ("channel", "delay"):
        a = actual.filter(pc.equal(actual.column("inputCol"), column))
        e = expected.filter(pc.equal(expected.column("inputCol"), column))
        np.testing.assert_allclose(a.column("0").to_numpy(), e.column("0").to_numpy(), atol=1e-12, rtol=0)


def test_normalization_off_keeps_raw_values(tmp_path, monkeypatch):
    metadata = preprocess(tmp_path, monkeypatch, normalize_real_columns=False)
    assert metadata.normalize_real_columns is False
    windows = load_split(tmp_path / "data" / "events-split0.parquet", ["amount"], metadata.categorical_columns)
    raw = pq.read_table(REFERENCE_PARQUET).column("amount").to_numpy()
    assert windows.columns["amount"][0, 0] == raw[0]


def test_normalize_on_all_data(tmp_path, monkeypatch):
    metadata = preprocess(tmp_path, monkeypatch, normalize_on_all_data=True)
    raw = pq.read_table(REFERENCE_PARQUET).column("delay").to_numpy()
    stats = metadata.selected_columns_statistics["delay"]
    assert stats["mean"] == pytest.approx(raw.mean(), abs=1e-12)
    assert stats["std"] == pytest.approx(raw.std(ddof=1), abs=1e-12)
    assert json.loads((tmp_path / "configs/metadata_configs/events.json").read_text())["normalize_on_all_data"] is True


def test_window_stride(tmp_path, monkeypatch):
    metadata = preprocess(tmp_path, monkeypatch, window_stride=5)
    assert metadata.window_stride == 5
    windows = load_split(tmp_path / "data" / "events-split0.parquet", ["event"], metadata.categorical_columns)
    for sequence_id in np.unique(windows.sequence_ids):
        starts = windows.start_item_positions[windows.sequence_ids == sequence_id]
        assert np.all(np.diff(starts) <= 5) and np.all(np.diff(starts) >= 1)


def test_max_rows(tmp_path, monkeypatch, capsys):
    preprocess(tmp_path, monkeypatch, max_rows=100)
    assert "read 100 rows" in capsys.readouterr().err


def test_type_overrides_and_numeric_id_order(tmp_path, monkeypatch):
    data = synthetic_parquet(
        tmp_path,
        {"code": [10, 9, 100, 9] * 5, "count": [1, 2, 3, 4] * 5, "flag": [True, False] * 10, "score": [0.5, 1.5] * 10},
    )
    metadata = preprocess(
        tmp_path / "project",
        monkeypatch,
        data_file=data,
        selected_columns=None,
        real_columns=["count"],
        categorical_columns=["score"],
        split_ratios=[1.0],
        window_length=4,
    )
    assert metadata.column_data_types == {"code": "Int64", "count": "Float64", "flag": "Int64", "score": "Int64"}
    assert metadata.id_maps["code"] == {"9": 3, "10": 4, "100": 5}  # as 3.x writes it, which reads keys as integers
    assert metadata.id_maps["flag"] == {"False": 3, "True": 4, "[unknown]": 0, "[other]": 1}
    assert metadata.id_maps["score"] == {"0.5": 3, "1.5": 4, "[unknown]": 0, "[other]": 1}
    assert metadata.n_classes == {"code": 6, "flag": 5, "score": 5}
    assert metadata.split_paths == ["./data/synthetic-split0.parquet"]


def test_config_overrides_and_defaults(tmp_path, monkeypatch):
    config_path = make_project(tmp_path / "proj", REFERENCE_PARQUET, reference_config(project_root="proj"))
    monkeypatch.chdir(tmp_path)
    config = load_preprocess_config(config_path, data_path="data/other.csv", selected_columns=["event"])
    assert config.project_root == tmp_path / "proj"
    assert config.preprocessing_data_path == tmp_path / "proj" / "data" / "other.csv"
    assert config.selected_columns == ("event",)
    assert config.window_stride == config.window_length == 17
    assert config.data_name == "other"


def test_data_path_alias_and_inferred_read_format(tmp_path, monkeypatch):
    config = reference_config()
    config["data_path"] = config.pop("preprocessing_data_path")
    del config["read_format"]
    config_path = make_project(tmp_path, REFERENCE_PARQUET, config)
    monkeypatch.chdir(tmp_path)
    loaded = load_preprocess_config(config_path)
    assert loaded.preprocessing_data_path == tmp_path / "data" / "events.parquet"
    assert loaded.read_format == "parquet"
    assert loaded.window_stride == loaded.effective_window_stride == 17


def test_splits_of_an_earlier_run_left_beside_this_ones_are_named(tmp_path, monkeypatch, capsys):
    preprocess(tmp_path / "same", monkeypatch)
    preprocess(tmp_path / "same", monkeypatch)
    assert "note:" not in capsys.readouterr().err  # the same outputs, replaced
    preprocess(tmp_path / "changed", monkeypatch, write_format="csv")
    preprocess(tmp_path / "changed", monkeypatch)
    log = capsys.readouterr().err
    earlier = "events-split0.csv, events-split0.csv.meanings.json, events-split1.csv, events-split1.csv.meanings.json"
    assert f"note: {earlier}, events-split2.csv, events-split2.csv.meanings.json in " in log
    assert "are not this run's outputs (an earlier run's splits, or files named like them)" in log


def test_batches_per_file_with_merged_output_is_noted_as_without_effect(tmp_path, monkeypatch, capsys):
    preprocess(tmp_path / "merged", monkeypatch, batches_per_file=4)
    assert "note: batches_per_file has no effect with merge_output: true" in capsys.readouterr().err
    preprocess(tmp_path / "shards", monkeypatch, batches_per_file=4, merge_output=False)
    assert "note: batches_per_file" not in capsys.readouterr().err
