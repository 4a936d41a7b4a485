"""The execution contract an exported model carries: what its inputs and outputs mean.

The contract is plain JSON-able data. ONNX files hold it in `metadata_props["sequifier.contract"]`,
PT bundles inside `model_config`. With it, `sequifier infer` needs only the artifact and the data.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sequifier.data.metadata import SPECIAL_TOKEN_IDS

if TYPE_CHECKING:  # reading a contract (ONNX inference) needs no torch
    from sequifier.config.resolve import RunSpec
    from sequifier.model.network import SequifierNetwork

CONTRACT_KEY = "sequifier.contract"
CONTRACT_VERSION = 2
PAD_INPUT = "left_pad_lengths"
EMBEDDING_OUTPUT = "backbone.embedding"
ARTIFACTS = ("generative", "embedding", "network")  # a PT bundle ("network") serves both model types
DROPOUT_MODES = ("inactive", "active", "selectable")  # selectable: PT, chosen at inference


def output_name(target: str) -> str:
    """ONNX value names must be unique, and a target is often an input too."""
    return f"{target}.prediction"


def build_contract(network: SequifierNetwork, spec: RunSpec, artifact: str, dropout: str) -> dict[str, Any]:
    """Plain description of the inputs, outputs, decoding and window of the model `spec` trains.

    `artifact` is what the file computes (see ARTIFACTS); `dropout` how it treats dropout (DROPOUT_MODES).
    """
    interface = spec.interface
    metadata = spec.metadata
    decoder = network.interfaces[spec.interface_name].decoder
    columns = {}
    for name in dict.fromkeys(interface.input_columns + interface.target_columns):
        column = spec.interface_columns[name]
        entry: dict[str, Any] = {"kind": column.kind, "data_type": metadata.column_data_types[name]}
        if column.kind == "categorical":
            entry["n_classes"] = column.n_classes
            entry["id_map"] = dict(metadata.id_maps.get(name, {}))
        else:
            entry["statistics"] = (
                metadata.selected_columns_statistics.get(name) if metadata.normalize_real_columns else None
            )
        columns[name] = entry
    targets = interface.target_columns
    class_ids = {t: decoder.class_ids(t).tolist() for t in targets if spec.interface_columns[t].kind == "categorical"}
    training = spec.config.global_training
    outputs = {t: output_name(t) for t in targets} if artifact != "embedding" else {}
    if artifact != "generative":
        outputs["embedding"] = EMBEDDING_OUTPUT
    return {
        "version": CONTRACT_VERSION,
        "artifact": artifact,
        "dropout": dropout,
        "model_name": spec.model_name,
        "interface": spec.interface_name,
        "objective": training.training_objective,
        "input_columns": list(interface.input_columns),
        "target_columns": list(targets),
        "columns": columns,
        "special_token_ids": dict(metadata.special_token_ids),
        "decoder_special_tokens": {k: list(v) for k, v in (interface.categorical_decoder_special_tokens or {}).items()},
        "class_ids": class_ids,
        "context_length": training.context_length,
        "target_offset": training.target_offset,
        "prediction_length": interface.decoder.prediction_length,
        "embedding_dim": spec.config.model.backbone.architecture.dim_model,
        "pad_input": PAD_INPUT,
        "outputs": outputs,
    }


def encode(contract: dict[str, Any]) -> str:
    return json.dumps(contract, sort_keys=True)


def decode(text: str) -> dict[str, Any]:
    """The contract of `text`; version-1 contracts (generative, no dropout, default special tokens) get today's keys."""
    contract = json.loads(text)
    if contract.get("version") == 1:
        contract.update(
            artifact="generative",
            dropout="inactive",
            special_token_ids=dict(SPECIAL_TOKEN_IDS),
            decoder_special_tokens={},
        )
    return contract
