"""ONNX export: a named input per column and padding lengths, outputs per target or the embedding, contract in metadata.

The TorchScript exporter (`dynamo=False`) serves both modes: the inference graph (eval mode,
constant folding) and, with `export_with_dropout`, the training-mode graph with constant
folding off, where every Dropout node is forced active (attention dropout is exported
without a training flag, which ONNX reads as inactive).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import onnx
import torch
from onnx import helper
from torch import Tensor

from sequifier.atomic import atomic_path
from sequifier.config.resolve import RunSpec
from sequifier.data.column_names import PAD_INPUT
from sequifier.export.contract import CONTRACT_KEY, build_contract, encode, graph_inputs
from sequifier.export.graph import InferenceGraph
from sequifier.export.graph_digest import GRAPH_DIGEST_KEY
from sequifier.model.network import SequifierNetwork

ACTIVE_FLAG = "sequifier.dropout_active"


def example_inputs(spec: RunSpec, batch: int = 2) -> tuple[Tensor, ...]:
    """Inputs of the exported signature: one [batch, context] tensor per input column ([batch, context,
    capacity] for a deep column), a [batch, context, capacity] mask per depth layout, then padding lengths."""
    length = spec.config.global_training.context_length
    tensors = []
    capacities = {}
    for name in spec.interface.input_columns:
        column = spec.interface_columns[name]
        shape = (batch, length, column.capacity) if column.layout else (batch, length)
        if column.layout:
            capacities[column.layout] = column.capacity
        if column.kind == "categorical":
            tensors.append(torch.randint(0, column.n_classes, shape))
        else:
            tensors.append(torch.randn(shape))
    tensors += [torch.ones(batch, length, capacity, dtype=torch.bool) for capacity in capacities.values()]
    tensors.append(torch.zeros(batch, dtype=torch.int64))
    return tuple(tensors)


def _force_dropout_active(proto: onnx.ModelProto) -> None:
    """Give every Dropout node a constant `training_mode = true` input."""
    proto.graph.initializer.append(helper.make_tensor(ACTIVE_FLAG, onnx.TensorProto.BOOL, [], [True]))
    for node in proto.graph.node:
        if node.op_type != "Dropout":
            continue
        if len(node.input) < 2 or not node.input[1]:
            raise RuntimeError(f"Dropout node {node.name} has no ratio input")
        if len(node.input) == 2:
            node.input.append(ACTIVE_FLAG)
        else:
            node.input[2] = ACTIVE_FLAG


def _record_graph_digest(proto: onnx.ModelProto) -> None:
    """Add the SHA-256 of the graph's stored bytes to the metadata (infer recomputes it from the file's graph field)."""
    entry = proto.metadata_props.add()
    entry.key, entry.value = GRAPH_DIGEST_KEY, hashlib.sha256(proto.graph.SerializeToString()).hexdigest()


def export_onnx(
    network: SequifierNetwork, spec: RunSpec, path: Path, artifact: str = "generative", with_dropout: bool = False
) -> None:
    """Write `artifact` ("generative" or "embedding") of `spec`'s interface to `path` atomically, contract embedded."""
    interface = spec.interface
    device = next(network.parameters()).device
    was_training = network.training
    contract = build_contract(network, spec, artifact, "active" if with_dropout else "inactive")
    graph = (
        InferenceGraph(network, spec.interface_name, graph_inputs(contract), list(interface.target_columns), artifact)
        .cpu()
        .eval()
    )
    input_names = graph_inputs(contract) + [PAD_INPUT]
    output_names = list(contract["outputs"].values())
    dynamic_axes = {name: {0: "batch"} for name in input_names + output_names}
    mode = torch.onnx.TrainingMode.TRAINING if with_dropout else torch.onnx.TrainingMode.EVAL
    try:
        with atomic_path(path) as temporary:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    graph,
                    example_inputs(spec),
                    str(temporary),
                    input_names=input_names,
                    output_names=output_names,
                    dynamic_axes=dynamic_axes,
                    dynamo=False,
                    training=mode,
                    do_constant_folding=not with_dropout,
                )
            proto = onnx.load(str(temporary))
            if with_dropout:
                _force_dropout_active(proto)
            entry = proto.metadata_props.add()
            entry.key = CONTRACT_KEY
            entry.value = encode(contract)
            _record_graph_digest(proto)
            onnx.save(proto, str(temporary))
    finally:
        network.to(device).train(was_training)
