"""The train guide's depth example (its preprocessing and singleton model fragment, scaled down) end to end:
`sequifier preprocess` of raw child rows -> `sequifier train` -> `sequifier infer` with ONNX and PT."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_sequifier, write_yaml
from depth_helpers import DEPTH_DIR, depth_train_config

INFER = {
    "project_root": ".",
    "model_type": "generative",
    "read_format": "pt",
    "data_path": "data/items-split2",
    "metadata_config_path": "configs/metadata_configs/items.json",
    "output_probabilities": True,
    "write_format": "csv",
}


def read_csv(path: Path) -> list[dict]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("depth-project")
    (project / "data").mkdir()
    shutil.copy(DEPTH_DIR / "data" / "items.parquet", project / "data" / "items.parquet")
    shutil.copytree(DEPTH_DIR / "configs", project / "configs", ignore=shutil.ignore_patterns("metadata_configs"))
    result = run_sequifier(["preprocess", "--config-path", "configs/preprocess.yaml"], project)
    assert result.returncode == 0, result.stderr
    config = depth_train_config(export_pt=True, training_plan={"epochs": 2})
    config["model"]["interface"]["decoder"]["prediction_length"] = 2
    write_yaml(project / "configs" / "train.yaml", config)
    result = run_sequifier(["train", "--config-path", "configs/train.yaml"], project)
    assert result.returncode == 0, result.stderr
    return project


def test_training_reads_the_depth_tensors_and_learns(trained: Path):
    rows = read_csv(trained / "logs" / "depth" / "validation-metrics.csv")
    losses = [float(r["value"]) for r in rows if r["target"] == "aggregate" and r["metric"] == "loss"]
    baseline = [float(r["value"]) for r in rows if r["target"] == "aggregate" and r["metric"] == "baseline_loss"]
    assert len(losses) == 2 and losses[-1] < baseline[-1]  # nextAction depends on the children
    models = {p.name for p in (trained / "models").iterdir()}
    assert {"depth-last-2.onnx", "depth-last-2.pt"} <= models
    assert any(name.startswith("depth-best-") and name.endswith(".onnx") for name in models)


def test_onnx_and_pt_inference_agree(trained: Path):
    outputs = {}
    for suffix in ("onnx", "pt"):
        write_yaml(
            trained / "configs" / f"infer-{suffix}.yaml", {**INFER, "model_path": f"models/depth-last-2.{suffix}"}
        )
        result = run_sequifier(["infer", "--config-path", f"configs/infer-{suffix}.yaml"], trained)
        assert result.returncode == 0, result.stderr
        predictions = read_csv(trained / "outputs" / "predictions" / "depth-last-2" / "part-000.csv")
        probabilities = read_csv(trained / "outputs" / "probabilities" / "depth-last-2" / "nextAction" / "part-000.csv")
        outputs[suffix] = predictions, probabilities
    (onnx_rows, onnx_probabilities), (pt_rows, pt_probabilities) = outputs["onnx"], outputs["pt"]
    assert onnx_rows == pt_rows and len(onnx_rows) == 2 * 60  # two predicted items per validation window
    assert {r["nextAction"] for r in onnx_rows} <= {"buy", "leave", "view", "[other]"}
    classes = [
        c
        for c in onnx_probabilities[0]
        if c not in ("sequenceId", "subsequenceId", "windowStartOffset", "itemPosition")
    ]
    onnx_values = np.array([[float(r[c]) for c in classes] for r in onnx_probabilities])
    pt_values = np.array([[float(r[c]) for c in classes] for r in pt_probabilities])
    assert np.abs(onnx_values - pt_values).max() <= 1e-4


def test_deep_autoregressive_inference_is_refused(trained: Path):
    config = {**INFER, "model_path": "models/depth-last-2.onnx", "autoregressive": True, "generation_steps": 2}
    write_yaml(trained / "configs" / "infer-generate.yaml", config)
    result = run_sequifier(["infer", "--config-path", "configs/infer-generate.yaml"], trained)
    assert result.returncode == 2
    assert "deep autoregressive inference is not supported" in result.stderr
