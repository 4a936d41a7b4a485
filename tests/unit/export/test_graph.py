"""The inference graph computes the network's forward pass at the last `prediction_length` positions.

Checked for every architecture option.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from export_test_helpers import example_batch, tiny_network, tiny_spec

from sequifier.export.graph import InferenceGraph

ARCHITECTURES = {
    "rope-mha-prenorm": {},
    "gqa-learned": {
        "attention": {"type": "gqa", "n_heads": 4, "n_kv_heads": 2},
        "position_encoding": {"type": "learned"},
    },
    "mqa-sinusoidal-no-output-projection": {
        "attention": {"type": "mqa", "n_heads": 2, "output_projection": False},
        "position_encoding": {"type": "sinusoidal"},
    },
    "postnorm-layernorm-gelu": {
        "normalization": {"type": "layernorm", "norm_first": False},
        "feed_forward": {"dim": 32, "activation": "gelu"},
    },
    "shared-layers": {"num_layers": 3, "shared_layer_groups": [[0, 2]]},
}


@pytest.mark.parametrize("name", list(ARCHITECTURES))
@pytest.mark.parametrize("prediction_length", [1, 3])
def test_graph_matches_network_forward(tmp_path: Path, name: str, prediction_length: int):
    architecture = {"num_layers": 2, **ARCHITECTURES[name]}
    spec = tiny_spec(tmp_path, architecture=architecture, decoder={"prediction_length": prediction_length})
    network = tiny_network(spec)
    inputs, padding = example_batch(spec)
    columns = list(spec.interface.input_columns)
    targets = list(spec.interface.target_columns)
    with torch.no_grad():
        expected = {t: out[:, -prediction_length:] for t, out in network(spec.interface_name, inputs, padding).items()}
        got = InferenceGraph(network, spec.interface_name, columns, targets, "generative")(
            *[inputs[c] for c in columns], padding
        )
        modules = network.interfaces[spec.interface_name]
        states = network.backbone(modules.adapter(modules.ingestion(inputs)), padding)[:, -prediction_length:]
        (embedding,) = InferenceGraph(network, spec.interface_name, columns, targets, "embedding")(
            *[inputs[c] for c in columns], padding
        )
    for target, output in zip(targets, got):
        assert output.shape == expected[target].shape
        torch.testing.assert_close(output, expected[target], atol=1e-5, rtol=1e-5)
    assert embedding.shape == (len(padding), prediction_length, spec.config.model.backbone.architecture.dim_model)
    torch.testing.assert_close(embedding, states, atol=1e-5, rtol=1e-5)


def test_graph_in_training_mode_applies_dropout(tmp_path: Path):
    spec = tiny_spec(tmp_path)
    network = tiny_network(spec)
    inputs, padding = example_batch(spec)
    graph = InferenceGraph(
        network,
        spec.interface_name,
        list(spec.interface.input_columns),
        list(spec.interface.target_columns),
        "generative",
    )
    tensors = [inputs[c] for c in spec.interface.input_columns] + [padding]
    with torch.no_grad():
        evaluated = graph.eval()(*tensors)[1]
        torch.manual_seed(5)
        first = graph.train()(*tensors)[1]
        torch.manual_seed(5)
        again = graph(*tensors)[1]
    assert not torch.allclose(first, evaluated)
    torch.testing.assert_close(first, again, atol=0, rtol=0)
