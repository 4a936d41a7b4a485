"""Preprocessing the reference-v3-splits raw data reproduces the 3.x outputs: short sequences, other split ratios,
between_sequence assignment; merged Parquet, Parquet shards and PT shards."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from reference_helpers import (
    SPLITS_REFERENCE_DIR,
    assert_folder_metadata_matches,
    assert_metadata_matches,
    assert_same_windows,
    load_sorted_split,
    read_json,
)

from sequifier.config.preprocess import load_preprocess_config
from sequifier.preprocess import run_preprocess

# config -> (output name, split path suffix: merged file or shard folder)
CONFIGS = {"a": ("events", ".parquet"), "b": ("events_b", ""), "c": ("events_c", "")}


@pytest.fixture(scope="module")
def splits_project(tmp_path_factory) -> Path:
    """Configs a, b and c run on a copy of the raw data, as the reference was made."""
    project = tmp_path_factory.mktemp("splits")
    shutil.copytree(
        SPLITS_REFERENCE_DIR / "configs", project / "configs", ignore=shutil.ignore_patterns("metadata_configs")
    )
    (project / "data").mkdir()
    for source, target in [
        ("events.parquet", "events.parquet"),
        ("events.parquet", "events_b.parquet"),
        ("events_c.csv", "events_c.csv"),
    ]:
        shutil.copy(SPLITS_REFERENCE_DIR / "data" / source, project / "data" / target)
    cwd = os.getcwd()
    os.chdir(project)
    try:
        for config in CONFIGS:
            run_preprocess(load_preprocess_config(Path(f"configs/preprocess-{config}.yaml")))
    finally:
        os.chdir(cwd)
    return project


@pytest.mark.parametrize("config", list(CONFIGS))
def test_metadata_matches_reference(splits_project, config):
    name = CONFIGS[config][0]
    path = Path("configs") / "metadata_configs" / f"{name}.json"
    assert_metadata_matches(read_json(splits_project / path), read_json(SPLITS_REFERENCE_DIR / path))


@pytest.mark.parametrize("split", [0, 1, 2])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_windows_match_reference(splits_project, config, split):
    name, suffix = CONFIGS[config]
    path = Path("data") / f"{name}-split{split}{suffix}"
    assert_same_windows(load_sorted_split(splits_project / path), load_sorted_split(SPLITS_REFERENCE_DIR / path))


@pytest.mark.parametrize("split", [0, 1, 2])
def test_merged_split_rows_match_reference_in_order(splits_project, split):
    path = Path("data") / f"events-split{split}.parquet"
    actual, expected = pq.read_table(splits_project / path), pq.read_table(SPLITS_REFERENCE_DIR / path)
    assert actual.schema.equals(expected.schema)
    for column in ("sequenceId", "subsequenceId", "startItemPosition", "splitEndItemPosition", "inputCol"):
        assert actual.column(column).to_pylist() == expected.column(column).to_pylist(), column


@pytest.mark.parametrize("split", [0, 1, 2])
@pytest.mark.parametrize("config", ["b", "c"])
def test_folder_metadata_matches_reference(splits_project, config, split):
    folder = Path("data") / f"{CONFIGS[config][0]}-split{split}"
    assert_folder_metadata_matches(splits_project / folder, read_json(SPLITS_REFERENCE_DIR / folder / "metadata.json"))


def test_last_item_of_a_sequence_is_in_no_split_when_ratios_sum_below_one(splits_project):
    """0.7 + 0.2 + 0.1 is 0.9999999999999999 in float64, so 3.x never puts a sequence's last item in a split."""
    raw = pq.read_table(SPLITS_REFERENCE_DIR / "data" / "events.parquet")
    last_positions = raw.group_by("sequenceId").aggregate([("itemPosition", "max")])
    last = dict(zip(*(last_positions.column(c).to_pylist() for c in ("sequenceId", "itemPosition_max"))))
    for split in range(3):
        windows = load_sorted_split(splits_project / "data" / f"events-split{split}.parquet")
        ends = windows.split_end_item_positions
        assert all(end <= last[sequence] for sequence, end in zip(windows.sequence_ids.tolist(), ends.tolist()))
