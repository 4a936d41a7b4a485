"""Preprocessing the reference-v3 raw data reproduces the 3.x outputs (metadata and merged Parquet splits)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from data_test_helpers import REFERENCE_DIR, make_project, reference_config
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.metadata import read_metadata, write_metadata
from sequifier.data.preprocess import run_preprocess

IDENTIFIERS = [
    "sequenceId",
    "subsequenceId",
    "startItemPosition",
    "leftPadLength",
    "splitStartItemPosition",
    "splitEndItemPosition",
    "inputCol",
]
REFERENCE_METADATA = REFERENCE_DIR / "configs" / "metadata_configs" / "events.json"


@pytest.fixture(params=[("events.csv", "csv"), ("events.parquet", "parquet")], ids=["csv", "parquet"])
def preprocessed(request, tmp_path, monkeypatch) -> Path:
    file_name, read_format = request.param
    config = reference_config(preprocessing_data_path=f"data/{file_name}", read_format=read_format)
    config_path = make_project(tmp_path, REFERENCE_DIR / "data" / file_name, config)
    monkeypatch.chdir(tmp_path)
    metadata_path = run_preprocess(load_preprocess_config(config_path))
    assert metadata_path == tmp_path / "configs" / "metadata_configs" / "events.json"
    return tmp_path


def test_metadata_matches_reference(preprocessed):
    expected = json.loads(REFERENCE_METADATA.read_text())
    actual = json.loads((preprocessed / "configs" / "metadata_configs" / "events.json").read_text())
    assert list(actual) == list(expected)
    for key in expected:
        if key != "selected_columns_statistics":
            assert actual[key] == expected[key], key
    for column, stats in expected["selected_columns_statistics"].items():
        assert actual["selected_columns_statistics"][column] == pytest.approx(stats, abs=1e-9, rel=0)


@pytest.mark.parametrize("split", [0, 1, 2])
def test_split_windows_match_reference(preprocessed, split):
    name = f"events-split{split}.parquet"
    expected = pq.read_table(REFERENCE_DIR / "data" / name)
    actual = pq.read_table(preprocessed / "data" / name)
    assert actual.schema.equals(expected.schema)
    assert actual.num_rows == expected.num_rows
    for column in IDENTIFIERS:
        assert actual.column(column).to_pylist() == expected.column(column).to_pylist(), column
    value_columns = [str(offset) for offset in range(16, -1, -1)]
    actual_values = np.column_stack([actual.column(c).to_numpy() for c in value_columns])
    expected_values = np.column_stack([expected.column(c).to_numpy() for c in value_columns])
    np.testing.assert_allclose(actual_values, expected_values, rtol=0, atol=1e-12)


def test_no_staging_files_left(preprocessed):
    leftovers = [p.name for p in preprocessed.rglob(".*") if p.is_file()]
    assert leftovers == []


def test_progress_goes_to_stderr(tmp_path, monkeypatch, capsys):
    config = reference_config()
    config_path = make_project(tmp_path, REFERENCE_DIR / "data" / "events.parquet", config)
    monkeypatch.chdir(tmp_path)
    run_preprocess(load_preprocess_config(config_path))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "5443 rows" in captured.err
    assert "split 0: 310 windows" in captured.err


def test_metadata_round_trip_keeps_reference_bytes(tmp_path):
    metadata = read_metadata(REFERENCE_METADATA)
    assert metadata.categorical_columns == ["event", "channel"]
    assert metadata.real_columns == ["amount", "delay"]
    out = tmp_path / "events.json"
    write_metadata(out, metadata)
    assert out.read_text() == REFERENCE_METADATA.read_text()
