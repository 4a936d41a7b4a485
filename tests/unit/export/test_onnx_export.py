"""ONNX export: dynamic batch, embedded execution contract, generative/embedding outputs, dropout-preserving graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from export_test_helpers import example_batch, tiny_network, tiny_spec

from sequifier.export.contract import CONTRACT_KEY, decode
from sequifier.export.onnx import ACTIVE_FLAG, export_onnx
from sequifier.infer.onnx_model import OnnxModel


def _numpy(
    inputs: dict[str, torch.Tensor], padding: torch.Tensor, rows: slice = slice(None)
) -> tuple[dict, np.ndarray]:
    return {
        k: v[rows].numpy().astype(np.int64 if v.dtype == torch.int64 else np.float32) for k, v in inputs.items()
    }, padding[rows].numpy()


def test_contract_describes_the_execution(tmp_path: Path):
    spec = tiny_spec(tmp_path)
    path = tmp_path / "model.onnx"
    export_onnx(tiny_network(spec), spec, path)
    contract = decode({p.key: p.value for p in onnx.load(str(path)).metadata_props}[CONTRACT_KEY])
    assert contract["artifact"] == "generative" and contract["dropout"] == "inactive"
    assert contract["interface"] == spec.interface_name and contract["objective"] == "causal"
    assert contract["input_columns"] == ["event", "channel", "amount"] and contract["target_columns"] == [
        "event",
        "amount",
    ]
    assert (contract["context_length"], contract["target_offset"], contract["prediction_length"]) == (8, 1, 1)
    metadata = spec.metadata
    assert contract["columns"]["event"] == {
        "kind": "categorical",
        "data_type": "Int64",
        "n_classes": 15,
        "id_map": metadata.id_maps["event"],
    }
    assert contract["columns"]["amount"] == {
        "kind": "real",
        "data_type": "Float64",
        "statistics": metadata.selected_columns_statistics["amount"],
    }
    assert contract["special_token_ids"] == {"[unknown]": 0, "[other]": 1, "[mask]": 2}
    assert contract["class_ids"]["event"] == [1] + list(range(3, 15))  # [other] is predictable by default
    assert contract["outputs"] == {"event": "event.prediction", "amount": "amount.prediction"}


def test_batch_dimension_is_dynamic_and_outputs_match_torch(tmp_path: Path):
    spec = tiny_spec(tmp_path, decoder={"prediction_length": 2})
    network = tiny_network(spec)
    path = tmp_path / "model.onnx"
    export_onnx(network, spec, path)
    model = OnnxModel(path)
    inputs, padding = example_batch(spec, batch=6)
    with torch.no_grad():
        expected = network(spec.interface_name, inputs, padding)
    for rows in (slice(0, 1), slice(0, 6)):
        outputs = model(*_numpy(inputs, padding, rows))
        for target in ("event", "amount"):
            np.testing.assert_allclose(outputs[target], expected[target][rows, -2:].numpy(), atol=1e-4)


def test_embedding_model_returns_final_backbone_states(tmp_path: Path):
    spec = tiny_spec(tmp_path)
    network = tiny_network(spec)
    path = tmp_path / "embedding.onnx"
    export_onnx(network, spec, path, "embedding")
    model = OnnxModel(path)
    assert model.contract["artifact"] == "embedding" and list(model.contract["outputs"]) == ["embedding"]
    inputs, padding = example_batch(spec)
    modules = network.interfaces[spec.interface_name]
    with torch.no_grad():
        states = network.backbone(modules.adapter(modules.ingestion(inputs)), padding)
    embedding = model(*_numpy(inputs, padding))["embedding"]
    assert embedding.shape == (6, 1, 16)
    np.testing.assert_allclose(embedding, states[:, -1:].numpy(), atol=1e-4)


def test_dropout_export_keeps_every_dropout_active(tmp_path: Path):
    spec = tiny_spec(tmp_path, architecture={"num_layers": 2})
    network = tiny_network(spec)
    path = tmp_path / "dropout.onnx"
    export_onnx(network, spec, path, with_dropout=True)
    assert not network.training
    graph = onnx.load(str(path)).graph
    dropouts = [n for n in graph.node if n.op_type == "Dropout"]
    # 3.x's sites: per layer the attention weights, the attention branch, after the feed-forward's activation and the
    # feed-forward branch (no dropout of the inputs: rope adds no positions there)
    assert len(dropouts) == 8
    assert all(list(n.input)[2] == ACTIVE_FLAG for n in dropouts)
    model = OnnxModel(path)
    assert model.contract["dropout"] == "active"
    inputs, padding = _numpy(*example_batch(spec))
    model.reseed(3)
    first = model(inputs, padding)["amount"]
    model.reseed(3)
    again = model(inputs, padding)["amount"]
    model.reseed(4)
    other = model(inputs, padding)["amount"]
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other)
    with torch.no_grad():
        evaluated = network(
            spec.interface_name, {k: torch.from_numpy(v) for k, v in inputs.items()}, torch.from_numpy(padding)
        )["amount"][:, -1:].numpy()
    assert not np.allclose(first, evaluated, atol=1e-4)
