"""Preprocessing the reference-v3 raw data reproduces the 3.x outputs: metadata, merged Parquet splits and PT shards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from reference_helpers import (
    REFERENCE_DIR,
    assert_folder_metadata_matches,
    assert_metadata_matches,
    assert_same_windows,
    load_sorted_split,
    make_project,
    preprocess_in,
    read_json,
    reference_config,
)

import sequifier.preprocess.groups as groups_module
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.metadata import read_metadata, write_metadata
from sequifier.preprocess import run_preprocess

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
REFERENCE_PT_METADATA = REFERENCE_DIR / "configs" / "metadata_configs" / "events_pt.json"


@pytest.fixture(
    params=[("events.csv", "csv", 1), ("events.parquet", "parquet", 1), ("events.parquet", "parquet", 2)],
    ids=["csv", "parquet", "parquet-2-cores-many-groups"],
)
def preprocessed(request, tmp_path, monkeypatch) -> Path:
    file_name, read_format, n_cores = request.param
    if n_cores > 1:
        monkeypatch.setattr(groups_module, "GROUP_SLOTS", 700)  # several groups per worker
    config = reference_config(preprocessing_data_path=f"data/{file_name}", read_format=read_format, n_cores=n_cores)
    config_path = make_project(tmp_path, REFERENCE_DIR / "data" / file_name, config)
    monkeypatch.chdir(tmp_path)
    metadata_path = run_preprocess(load_preprocess_config(config_path))
    assert metadata_path == tmp_path / "configs" / "metadata_configs" / "events.json"
    return tmp_path


def test_metadata_matches_reference(preprocessed):
    expected = json.loads(REFERENCE_METADATA.read_text())
    actual = json.loads((preprocessed / "configs" / "metadata_configs" / "events.json").read_text())
    assert_metadata_matches(actual, expected)


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
    leftovers = [p.name for p in preprocessed.rglob(".*")]
    assert leftovers == []


@pytest.fixture(scope="module")
def pt_project(tmp_path_factory) -> Path:
    """The reference pt config run on a copy of the raw data (n_cores 2, as the reference was made)."""
    project = tmp_path_factory.mktemp("pt")
    shutil.copytree(REFERENCE_DIR / "configs", project / "configs", ignore=shutil.ignore_patterns("metadata_configs"))
    (project / "data").mkdir()
    shutil.copy(REFERENCE_DIR / "data" / "events.parquet", project / "data" / "events_pt.parquet")
    preprocess_in(project, "configs/preprocess-pt.yaml")
    return project


def test_pt_metadata_matches_reference(pt_project):
    actual = read_json(pt_project / "configs" / "metadata_configs" / "events_pt.json")
    assert_metadata_matches(actual, read_json(REFERENCE_PT_METADATA))


@pytest.mark.parametrize("split", [0, 1, 2])
def test_pt_folder_metadata_matches_reference(pt_project, split):
    name = f"events_pt-split{split}"
    assert_folder_metadata_matches(
        pt_project / "data" / name, read_json(REFERENCE_DIR / "data" / name / "metadata.json")
    )


@pytest.mark.parametrize("split", [0, 1, 2])
def test_pt_shards_hold_the_reference_windows(pt_project, split):
    name = f"events_pt-split{split}"
    assert_same_windows(load_sorted_split(pt_project / "data" / name), load_sorted_split(REFERENCE_DIR / "data" / name))


def test_pt_shard_payload_layout_matches_reference(pt_project):
    folder = "events_pt-split1"
    reference_file = sorted((REFERENCE_DIR / "data" / folder).glob("*.pt"))[0]
    expected = torch.load(reference_file, weights_only=True)
    ours = [torch.load(p, weights_only=True) for p in sorted((pt_project / "data" / folder).glob("*.pt"))]
    for payload in ours:
        assert list(payload) == list(expected)
        assert payload["format"] == expected["format"] and payload["version"] == expected["version"]
        assert payload["metadata"] == expected["metadata"]
        assert list(payload["sequences"]) == list(expected["sequences"])
        for column, tensor in expected["sequences"].items():
            assert payload["sequences"][column].dtype == tensor.dtype
            assert payload["sequences"][column].shape[1] == tensor.shape[1]
        for key in (
            "sequence_ids",
            "subsequence_ids",
            "start_item_positions",
            "left_pad_lengths",
            "split_start_item_positions",
            "split_end_item_positions",
        ):
            assert payload[key].dtype == torch.int64 and payload[key].ndim == 1


@pytest.mark.parametrize("split", [0, 1, 2])
def test_reference_merged_and_pt_forms_load_the_same_windows(split):
    merged = load_sorted_split(REFERENCE_DIR / "data" / f"events-split{split}.parquet")
    shards = load_sorted_split(REFERENCE_DIR / "data" / f"events_pt-split{split}")
    assert_same_windows(shards, merged, atol=1e-12)


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
