"""Preprocessing the reference-v3-depth raw data with its named depth layout reproduces what 3.1.1.0 wrote.

Metadata, folder metadata, shard names, payload layout, windows, deep [N, W, D] tensors and the
`depth_valid_masks` are compared with tests/fixtures/reference-v3-depth (written by 3.1.1.0).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REFERENCE_DIR
from reference_helpers import (
    IDENTIFIER_ATTRIBUTES,
    assert_folder_metadata_matches,
    assert_metadata_matches,
    preprocess_in,
    read_json,
)

from sequifier.data.stored import load_split

DEPTH_DIR = REFERENCE_DIR.parent / "reference-v3-depth"
COLUMNS = ["accountType", "subitemType", "subitemAmount", "nextAction"]
CATEGORICAL = ["accountType", "subitemType", "nextAction"]
DEEP = ["subitemType", "subitemAmount"]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The reference config run on a copy of the raw items."""
    root = tmp_path_factory.mktemp("depth")
    (root / "configs").mkdir()
    (root / "data").mkdir()
    shutil.copy(DEPTH_DIR / "configs" / "preprocess.yaml", root / "configs" / "preprocess.yaml")
    shutil.copy(DEPTH_DIR / "data" / "items.parquet", root / "data" / "items.parquet")
    preprocess_in(root, "configs/preprocess.yaml")
    return root


def test_metadata_matches_reference(project):
    actual = read_json(project / "configs" / "metadata_configs" / "items.json")
    expected = read_json(DEPTH_DIR / "configs" / "metadata_configs" / "items.json")
    assert_metadata_matches(actual, expected)
    assert actual["depth_layouts"]["subitems"]["context_length"] == 8
    assert actual["tensor_payload_version"] == 2


@pytest.mark.parametrize("split", [0, 1, 2])
def test_folder_metadata_and_shard_names_match_reference(project, split):
    name = f"items-split{split}"
    expected = read_json(DEPTH_DIR / "data" / name / "metadata.json")
    assert_folder_metadata_matches(project / "data" / name, expected)
    ours = [entry["path"] for entry in read_json(project / "data" / name / "metadata.json")["batch_files"]]
    assert ours == [entry["path"] for entry in expected["batch_files"]] == [f"{name}-0-00000000.pt"]


@pytest.mark.parametrize("split", [0, 1, 2])
def test_shards_hold_the_reference_windows_depth_tensors_and_masks(project, split):
    name = f"items-split{split}"
    ours = load_split(project / "data" / name, COLUMNS, CATEGORICAL)
    reference = load_split(DEPTH_DIR / "data" / name, COLUMNS, CATEGORICAL)
    assert len(ours) == len(reference) > 0
    for attr in IDENTIFIER_ATTRIBUTES:
        np.testing.assert_array_equal(getattr(ours, attr), getattr(reference, attr), err_msg=attr)
    for column in COLUMNS:
        assert ours.columns[column].shape == reference.columns[column].shape
        np.testing.assert_allclose(ours.columns[column], reference.columns[column], rtol=0, atol=1e-9)
    assert ours.columns["subitemType"].shape[2] == 8 and ours.columns["accountType"].ndim == 2
    np.testing.assert_array_equal(ours.depth_masks["subitems"], reference.depth_masks["subitems"])
    assert list(ours.depth_masks) == ["subitems"]


def test_padding_is_unknown_zero_and_false_masks(project):
    windows = load_split(project / "data" / "items-split1", COLUMNS, CATEGORICAL)
    mask = windows.depth_masks["subitems"]
    for column in DEEP:
        assert np.all(windows.columns[column][~mask] == 0), column
    slots = np.arange(mask.shape[1])[None, :]
    padded = slots < windows.left_pad_lengths[:, None]
    assert padded.any() and not mask[padded].any()
    assert np.all(mask.sum(axis=2)[~padded] >= 1)  # every raw item has at least one child


def test_payload_layout_matches_reference(project):
    ours = torch.load(project / "data" / "items-split0" / "items-split0-0-00000000.pt", weights_only=True)
    reference = torch.load(DEPTH_DIR / "data" / "items-split0" / "items-split0-0-00000000.pt", weights_only=True)
    assert list(ours) == list(reference)
    assert (ours["format"], ours["version"]) == (reference["format"], reference["version"])
    assert list(ours["sequences"]) == list(reference["sequences"])
    for column, tensor in reference["sequences"].items():
        assert ours["sequences"][column].dtype == tensor.dtype
        assert ours["sequences"][column].shape == tensor.shape
    masks = ours["metadata"]["depth_valid_masks"]
    assert list(masks) == ["subitems"] and masks["subitems"].dtype == torch.bool
    assert {k: v for k, v in ours["metadata"].items() if k != "depth_valid_masks"} == {
        k: v for k, v in reference["metadata"].items() if k != "depth_valid_masks"
    }
