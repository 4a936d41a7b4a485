"""ONNX export: one named input per column plus padding lengths, one output per target, contract in metadata."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import onnx
import torch
from torch import Tensor, nn

from sequifier.config.resolve import RunSpec
from sequifier.export.contract import CONTRACT_KEY, PAD_INPUT, build_contract, encode, output_name
from sequifier.model.network import SequifierNetwork


class _PositionalModel(nn.Module):
    """Adapts the network's dict interface to the positional signature ONNX needs."""

    def __init__(self, network: SequifierNetwork, interface: str, input_columns: tuple[str, ...], target_columns: tuple[str, ...]):
        super().__init__()
        self.network = network
        self.interface = interface
        self.input_columns = input_columns
        self.target_columns = target_columns

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        inputs = dict(zip(self.input_columns, tensors[:-1]))
        outputs = self.network(self.interface, inputs, tensors[-1])
        return tuple(outputs[t] for t in self.target_columns)


def example_inputs(spec: RunSpec, batch: int = 2) -> tuple[Tensor, ...]:
    """Inputs of the exported signature: one [batch, context] tensor per input column, then padding lengths."""
    length = spec.config.global_training.context_length
    tensors = []
    for name in spec.interface.input_columns:
        column = spec.interface_columns[name]
        if column.kind == "categorical":
            tensors.append(torch.randint(0, column.n_classes, (batch, length)))
        else:
            tensors.append(torch.randn(batch, length))
    tensors.append(torch.zeros(batch, dtype=torch.int64))
    return tuple(tensors)


def export_onnx(network: SequifierNetwork, spec: RunSpec, path: Path) -> None:
    """Write the model for `spec`'s interface to `path` atomically, with its contract embedded."""
    interface = spec.interface
    device = next(network.parameters()).device
    was_training = network.training
    model = _PositionalModel(network, spec.interface_name, interface.input_columns, interface.target_columns).cpu().eval()
    input_names = list(interface.input_columns) + [PAD_INPUT]
    output_names = [output_name(t) for t in interface.target_columns]
    dynamic_axes = {name: {0: "batch"} for name in input_names + output_names}
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example_inputs(spec), str(temporary), input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, dynamo=False, do_constant_folding=True)
    proto = onnx.load(str(temporary))
    entry = proto.metadata_props.add()
    entry.key = CONTRACT_KEY
    entry.value = encode(build_contract(network, spec))
    onnx.save(proto, str(temporary))
    os.replace(temporary, path)
    network.to(device).train(was_training)
