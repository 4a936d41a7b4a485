"""Helpers of the integration tests that train (no tests here): project copies, in-process runs, ONNX parity."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import torch
from conftest import REFERENCE_DIR, write_yaml

from sequifier import cli
from sequifier.config.resolve import RunSpec
from sequifier.data.stored import load_split
from sequifier.export.artifacts import export_network
from sequifier.infer.onnx_model import OnnxModel
from sequifier.infer.runner import model_inputs


def project_with(base: Path, name: str, config: dict) -> Path:
    """A copy of the reference-v3 project in `base/name` with `config` as its configs/train.yaml."""
    project = base / name
    shutil.copytree(REFERENCE_DIR, project)
    write_yaml(project / "configs" / "train.yaml", config)
    return project


def train_here(project: Path, monkeypatch, *overrides: str) -> None:
    """`sequifier train` in this process (no interpreter start-up), from the project folder."""
    with monkeypatch.context() as patch:
        patch.chdir(project)
        assert cli.main(["train", *overrides]) == 0


def assert_onnx_matches_weights(spec: RunSpec, onnx_path: Path, weights: dict[str, torch.Tensor]) -> None:
    """The ONNX model predicts what `weights` predict in torch on split 1 (max abs difference <= 1e-4)."""
    network = export_network(spec.network, weights, torch.device("cpu")).eval()
    model = OnnxModel(onnx_path)
    categorical = {n for n, c in spec.interface_columns.items() if c.kind == "categorical"}
    split = spec.project_root / "data" / "events-split1.parquet"
    stored = load_split(split, list(spec.interface.input_columns), categorical)
    inputs, padding = model_inputs(stored.columns, stored.left_pad_lengths, model.contract)
    predicted = model(inputs, padding)
    with torch.no_grad():
        tensors = {k: torch.from_numpy(v) for k, v in inputs.items()}
        expected = network(spec.interface_name, tensors, torch.from_numpy(padding))
    for target in spec.interface.target_columns:
        assert np.abs(predicted[target] - expected[target][:, -1:].numpy()).max() <= 1e-4, target
