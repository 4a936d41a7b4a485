"""Helpers shared by the preprocess and stored-window tests: reference fixtures, throwaway projects, shard folders."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REFERENCE_DIR

from sequifier.data.folder_metadata import CONTENT_DIGEST
from sequifier.data.stored import load_split
from sequifier.data.stored_windows import IDENTIFIER_COLUMNS, StoredWindows

SPLITS_REFERENCE_DIR = REFERENCE_DIR.parent / "reference-v3-splits"
COLUMNS = ["event", "channel", "amount", "delay"]
CATEGORICAL = ["event", "channel"]
IDENTIFIER_ATTRIBUTES = tuple(IDENTIFIER_COLUMNS.values())


def make_project(root: Path, data_file: Path, config: dict) -> Path:
    """A project folder with `data/<data_file.name>` and `configs/preprocess.yaml`; returns the config path."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "configs").mkdir(parents=True, exist_ok=True)
    if data_file.is_dir():
        shutil.copytree(data_file, root / "data" / data_file.name)
    elif data_file.exists():
        shutil.copy(data_file, root / "data" / data_file.name)
    config_path = root / "configs" / "preprocess.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return config_path


def reference_config(**changes) -> dict:
    config = yaml.safe_load((REFERENCE_DIR / "configs" / "preprocess-parquet.yaml").read_text())
    config.update(changes)
    return config


def sorted_windows(windows: StoredWindows) -> StoredWindows:
    """The same windows ordered by (sequenceId, subsequenceId), so shard boundaries do not matter."""
    order = np.lexsort((windows.subsequence_ids, windows.sequence_ids))
    return StoredWindows(
        columns={name: values[order] for name, values in windows.columns.items()},
        **{attr: getattr(windows, attr)[order] for attr in IDENTIFIER_ATTRIBUTES},
    )


def load_sorted_split(path: Path, columns=COLUMNS, categorical=CATEGORICAL) -> StoredWindows:
    return sorted_windows(load_split(path, columns, categorical))


def assert_same_windows(actual: StoredWindows, expected: StoredWindows, atol: float = 1e-9) -> None:
    assert len(actual) == len(expected)
    for attr in IDENTIFIER_ATTRIBUTES:
        np.testing.assert_array_equal(getattr(actual, attr), getattr(expected, attr), err_msg=attr)
    assert list(actual.columns) == list(expected.columns)
    for name, values in expected.columns.items():
        assert actual.columns[name].dtype == values.dtype, name
        np.testing.assert_allclose(actual.columns[name], values, rtol=0, atol=atol, err_msg=name)


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def assert_metadata_matches(actual: dict, expected: dict) -> None:
    """Same keys in the same order and equal values; statistics to 1e-9."""
    assert list(actual) == list(expected)
    for key in expected:
        if key != "selected_columns_statistics":
            assert actual[key] == expected[key], key
    for column, stats in expected["selected_columns_statistics"].items():
        assert actual["selected_columns_statistics"][column] == pytest.approx(stats, abs=1e-9, rel=0)


def _pad_totals(entries: list[dict]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for entry in entries:
        for pad, count in entry["left_pad_length_histogram"].items():
            totals[pad] = totals.get(pad, 0) + count
    return totals


def assert_folder_metadata_matches(folder: Path, expected: dict) -> None:
    """A shard folder's metadata.json equals `expected`, except how the windows are spread over the shard files."""
    actual = read_json(folder / "metadata.json")
    assert list(actual) == list(expected)
    assert_metadata_matches(
        {key: value for key, value in actual.items() if key != "batch_files"},
        {key: value for key, value in expected.items() if key != "batch_files"},
    )
    for entry in actual["batch_files"]:
        digest = [CONTENT_DIGEST] if entry["path"].endswith(".pt") else []  # after 3.x's keys, which 3.x reads
        assert list(entry) == ["path", "samples", "left_pad_length_histogram", "target_valid_from_histogram", *digest]
        assert (folder / entry["path"]).is_file()
    assert sum(e["samples"] for e in actual["batch_files"]) == sum(e["samples"] for e in expected["batch_files"])
    assert _pad_totals(actual["batch_files"]) == _pad_totals(expected["batch_files"])


REFERENCE_PARQUET = REFERENCE_DIR / "data" / "events.parquet"


def preprocess_reference(
    root: Path, monkeypatch, data_file: Path = REFERENCE_PARQUET, randomize: bool = False, **changes
) -> Path:
    """Preprocess `data_file` in a project at `root` with the reference config plus `changes`.

    Returns the metadata path.
    """
    from sequifier.config.preprocess import load_preprocess_config
    from sequifier.preprocess import run_preprocess

    config = reference_config(preprocessing_data_path=f"data/{data_file.name}", **changes)
    config_path = make_project(root, data_file, config)
    monkeypatch.chdir(root)
    return run_preprocess(load_preprocess_config(config_path, randomize=randomize))


def preprocess_in(root: Path, config: str) -> Path:
    """Run the preprocess config `config` (relative to `root`) from `root`, as a user in that folder would."""
    from sequifier.config.preprocess import load_preprocess_config
    from sequifier.preprocess import run_preprocess

    cwd = os.getcwd()
    os.chdir(root)
    try:
        return run_preprocess(load_preprocess_config(Path(config)))
    finally:
        os.chdir(cwd)


# A patch run before preprocess in a child process: it SIGKILLs itself as the swap moves its third output in.
KILLED_IN_THE_SWAP = """
import os, signal
import sequifier.preprocess.staging as staging
real, calls = staging.replace_durably, []
def dying(source, target):
    calls.append(target)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    real(source, target)
staging.replace_durably = dying
"""
