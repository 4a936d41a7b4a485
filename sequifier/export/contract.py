"""The execution contract an exported model carries: what its inputs and outputs mean."""

from __future__ import annotations

import json
from typing import Any

from sequifier.config.resolve import RunSpec
from sequifier.model.network import SequifierNetwork

CONTRACT_KEY = "sequifier.contract"
CONTRACT_VERSION = 1
PAD_INPUT = "left_pad_lengths"


def output_name(target: str) -> str:
    """ONNX value names must be unique, and a target is often an input too."""
    return f"{target}.prediction"


def build_contract(network: SequifierNetwork, spec: RunSpec) -> dict[str, Any]:
    """Plain JSON-able description of the inputs, outputs, decoding and window of a model."""
    interface = spec.interface
    metadata = spec.metadata
    decoder = network.interfaces[spec.interface_name].decoder
    columns = {}
    for name in dict.fromkeys(interface.input_columns + interface.target_columns):
        column = spec.interface_columns[name]
        entry: dict[str, Any] = {"kind": column.kind}
        if column.kind == "categorical":
            entry["n_classes"] = column.n_classes
            entry["id_map"] = metadata.id_maps.get(name, {})
        else:
            entry["statistics"] = metadata.selected_columns_statistics.get(name) if metadata.normalize_real_columns else None
        columns[name] = entry
    class_ids = {t: decoder.class_ids(t).tolist() for t in interface.target_columns if spec.interface_columns[t].kind == "categorical"}
    training = spec.config.global_training
    return {
        "version": CONTRACT_VERSION,
        "model_name": spec.model_name,
        "interface": spec.interface_name,
        "objective": training.training_objective,
        "input_columns": list(interface.input_columns),
        "target_columns": list(interface.target_columns),
        "columns": columns,
        "class_ids": class_ids,
        "context_length": training.context_length,
        "target_offset": training.target_offset,
        "prediction_length": interface.decoder.prediction_length,
        "pad_input": PAD_INPUT,
        "outputs": {t: output_name(t) for t in interface.target_columns},
    }


def encode(contract: dict[str, Any]) -> str:
    return json.dumps(contract, sort_keys=True)


def decode(text: str) -> dict[str, Any]:
    return json.loads(text)
