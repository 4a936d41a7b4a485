"""The exported ONNX model computes what the torch model computes (max abs diff <= 1e-4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.data.stored import load_split
from sequifier.export.onnx import export_onnx
from sequifier.infer.onnx_model import OnnxModel
from sequifier.infer.runner import model_inputs
from sequifier.model.network import build_network


def test_onnx_matches_torch_on_padded_and_unpadded_windows(reference_project: Path, tmp_path: Path):
    config = tiny_train_config()
    config["model"]["backbone"]["architecture"]["num_layers"] = 2
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    torch.manual_seed(3)
    network = build_network(spec.network).eval()
    path = tmp_path / "model.onnx"
    export_onnx(network, spec, path)
    model = OnnxModel(path)

    categorical = {n for n, c in spec.interface_columns.items() if c.kind == "categorical"}
    paddings = []
    for split in ("events-split0.parquet", "events-split1.parquet"):
        stored = load_split(reference_project / "data" / split, list(spec.interface.input_columns), categorical)
        inputs, padding = model_inputs(stored.columns, stored.left_pad_lengths, model.contract)
        paddings.append(padding)
        onnx_outputs = model(inputs, padding)
        with torch.no_grad():
            torch_outputs = network(
                spec.interface_name, {k: torch.from_numpy(v) for k, v in inputs.items()}, torch.from_numpy(padding)
            )
        for target in spec.interface.target_columns:
            difference = np.abs(onnx_outputs[target] - torch_outputs[target][:, -1:].numpy()).max()
            assert difference <= 1e-4, (split, target, difference)
    assert paddings[0].max() == 0 and paddings[1].min() > 0
