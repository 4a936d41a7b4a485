"""The inference graph of a depth model and of a decoder with support > 1: the network's forward at the last
prediction_length positions, from named column inputs plus one mask input per depth layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from depth_helpers import depth_batch, depth_spec, depth_train_config
from export_test_helpers import example_batch, tiny_network, tiny_spec

from sequifier.export.contract import build_contract, graph_inputs
from sequifier.export.graph import InferenceGraph
from sequifier.export.onnx import export_onnx
from sequifier.infer.onnx_model import OnnxModel
from sequifier.model.network import build_network


def outputs(network, interface: str, names: list[str], targets: list[str], inputs: dict, padding, artifact: str):
    graph = InferenceGraph(network, interface, names, targets, artifact).eval()
    with torch.no_grad():
        return graph(*[inputs[n] for n in names], padding)


@pytest.mark.parametrize("support, prediction_length", [(2, 1), (3, 2), (4, 4)])
def test_support_graph_decodes_the_last_prediction_length_positions(tmp_path: Path, support, prediction_length):
    decoder = {"support": support, "prediction_length": prediction_length}
    spec = tiny_spec(tmp_path, architecture={"num_layers": 2}, decoder=decoder)
    network = tiny_network(spec)
    inputs, padding = example_batch(spec)
    names, targets = list(spec.interface.input_columns), list(spec.interface.target_columns)
    with torch.no_grad():
        full = network(spec.interface_name, inputs, padding)
    for target, got in zip(
        targets, outputs(network, spec.interface_name, names, targets, inputs, padding, "generative")
    ):
        assert full[target].shape[1] == 8 - support + 1
        torch.testing.assert_close(got, full[target][:, -prediction_length:], atol=1e-5, rtol=1e-5)


def depth_network(config: dict | None = None):
    spec = depth_spec(config)
    torch.manual_seed(0)
    return spec, build_network(spec.network).eval()


def test_the_contract_names_the_layout_and_its_mask_input():
    spec, network = depth_network()
    contract = build_contract(network, spec, "generative", "inactive")
    assert contract["depth_layouts"] == {
        "subitems": {
            "position_column": "subItemPosition",
            "columns": ["subitemType", "subitemAmount"],
            "context_length": 8,
            "position_base": 0,
            "allow_gaps": False,
        }
    }
    assert graph_inputs(contract) == ["accountType", "subitemType", "subitemAmount", "depth_valid_masks.subitems"]


@pytest.mark.parametrize("prediction_length, support", [(1, 1), (3, 2)])
def test_depth_graph_matches_the_network_and_onnx_matches_torch(tmp_path: Path, prediction_length, support):
    config = depth_train_config()
    config["model"]["interface"]["decoder"].update(prediction_length=prediction_length, support=support)
    spec, network = depth_network(config)
    names = graph_inputs(build_contract(network, spec, "generative", "inactive"))
    inputs, padding = depth_batch(), torch.tensor([2, 0, 5, 2])
    with torch.no_grad():
        full = network("default", inputs, padding)["nextAction"]
    (got,) = outputs(network, "default", names, ["nextAction"], inputs, padding, "generative")
    torch.testing.assert_close(got, full[:, -prediction_length:], atol=1e-5, rtol=1e-5)
    export_onnx(network, spec, tmp_path / "depth.onnx")
    model = OnnxModel(tmp_path / "depth.onnx")
    onnx = model({n: t.numpy() for n, t in inputs.items()}, padding.numpy())["nextAction"]
    assert onnx.shape == tuple(got.shape)
    assert np.abs(onnx - got.numpy()).max() <= 1e-4
