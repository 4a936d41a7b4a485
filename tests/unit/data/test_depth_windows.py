"""Deep columns and depth masks in stored windows: loading pt shards, and gathering [B, C, D] views into batches."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from depth_helpers import DEPTH_DIR

from sequifier.config.errors import UserError
from sequifier.data.pt_shards import pt_payload
from sequifier.data.stored import load_split
from sequifier.data.views import ViewShape, gather_batch, to_tensors, training_views

SPLIT = DEPTH_DIR / "data" / "items-split0"
COLUMNS = ["accountType", "subitemType", "subitemAmount", "nextAction"]
CATEGORICAL = {"accountType", "subitemType", "nextAction"}
MASK = "depth_valid_masks.subitems"


def test_loading_keeps_the_capacity_axis_and_the_layout_mask():
    windows = load_split(SPLIT, COLUMNS, CATEGORICAL)
    payload = torch.load(next(SPLIT.glob("*.pt")), weights_only=True)
    assert windows.columns["subitemType"].shape == (85, 33, 8) and windows.columns["accountType"].shape == (85, 33)
    np.testing.assert_array_equal(windows.depth_masks["subitems"], payload["metadata"]["depth_valid_masks"]["subitems"])
    shallow_only = load_split(SPLIT, ["accountType", "nextAction"], CATEGORICAL)
    assert shallow_only.depth_masks == {}  # masks come with the layouts whose columns are read


def test_a_pt_payload_round_trips_deep_columns_and_masks(tmp_path):
    windows = load_split(SPLIT, COLUMNS, CATEGORICAL)
    types = {"accountType": "Int64", "subitemType": "Int64", "subitemAmount": "Float64", "nextAction": "Int64"}
    folder = tmp_path / "split"
    folder.mkdir()
    torch.save(pt_payload(windows, types), folder / "shard.pt")
    described = json.loads((SPLIT / "metadata.json").read_text())
    described["batch_files"] = [{"path": "shard.pt", "samples": len(windows)}]
    (folder / "metadata.json").write_text(json.dumps(described))
    again = load_split(folder, COLUMNS, CATEGORICAL)
    for column in COLUMNS:
        np.testing.assert_array_equal(again.columns[column], windows.columns[column])
    np.testing.assert_array_equal(again.depth_masks["subitems"], windows.depth_masks["subitems"])


def broken_copy(tmp_path, change):
    folder = tmp_path / "split"
    shutil.copytree(SPLIT, folder)
    shard = next(folder.glob("*.pt"))
    payload = torch.load(shard, weights_only=True)
    change(payload)
    torch.save(payload, shard)
    return folder


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p: p["metadata"]["depth_valid_masks"].pop("subitems"), "depth_valid_masks.subitems"),
        (
            lambda p: p["metadata"]["depth_valid_masks"].update(
                subitems=p["metadata"]["depth_valid_masks"]["subitems"].int()
            ),
            "boolean",
        ),
        (lambda p: p["sequences"].update(subitemType=p["sequences"]["subitemType"][:, :, :5]), "capacity"),
    ],
    ids=["missing-mask", "mask-not-boolean", "wrong-capacity"],
)
def test_malformed_depth_shards_are_user_errors(tmp_path, change, message):
    folder = broken_copy(tmp_path, change)
    with pytest.raises(UserError, match=message):
        load_split(folder, COLUMNS, CATEGORICAL)


def test_batches_gather_deep_inputs_and_masks_of_the_view():
    windows = to_tensors(load_split(SPLIT, COLUMNS, CATEGORICAL), CATEGORICAL)
    shape = ViewShape(context_length=16, target_offset=1, support=2)
    index, end = training_views(windows, shape)
    batch = gather_batch(
        windows, index[:5], end[:5], shape, ("accountType", "subitemType", "subitemAmount"), ("nextAction",)
    )
    assert batch.inputs["subitemType"].shape == (5, 16, 8) and batch.inputs[MASK].dtype == torch.bool
    assert batch.inputs["accountType"].shape == (5, 16)
    assert batch.targets["nextAction"].shape == (5, 15)  # C - support + 1 decoded positions
    for row in range(5):
        start = int(end[row]) - 1 - 16
        window = int(index[row])
        torch.testing.assert_close(
            batch.inputs["subitemAmount"][row], windows.columns["subitemAmount"][window, start : start + 16]
        )
        assert torch.equal(batch.inputs[MASK][row], windows.depth_masks["subitems"][window, start : start + 16])
