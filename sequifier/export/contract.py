"""The execution contract an exported model carries: what its inputs and outputs mean.

The contract is plain JSON-able data. ONNX files hold it in `metadata_props["sequifier.contract"]`,
PT bundles inside `model_config`. With it, `sequifier infer` needs only the artifact and the data.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from sequifier.config.errors import UserError
from sequifier.config.network import depth_mask_input
from sequifier.config.schema import TRAINING_OBJECTIVES
from sequifier.data.column_names import PAD_INPUT, column_name_problem
from sequifier.data.metadata import MAX_CLASSES, SPECIAL_TOKEN_IDS, check_id_map

if TYPE_CHECKING:  # reading a contract (ONNX inference) needs no torch
    from sequifier.config.resolve import RunSpec
    from sequifier.model.network import SequifierNetwork

CONTRACT_KEY = "sequifier.contract"
CONTRACT_VERSION = 2
EMBEDDING_OUTPUT = "backbone.embedding"
ARTIFACTS = ("generative", "embedding", "network")  # a PT bundle ("network") serves both model types
DROPOUT_MODES = ("inactive", "active", "selectable")  # selectable: PT, chosen at inference
KINDS = ("categorical", "real")
# Bounds of a contract read from an untrusted file: text size, nesting of JSON values, window and class counts.
MAX_CONTRACT_CHARS = 64 * 2**20
MAX_NESTING = 8
MAX_CONTEXT_LENGTH = 2**20
FIELD_TYPES = {
    "version": int,
    "artifact": str,
    "dropout": str,
    "model_name": str,
    "interface": str,
    "objective": str,
    "input_columns": list,
    "target_columns": list,
    "columns": dict,
    "special_token_ids": dict,
    "decoder_special_tokens": dict,
    "class_ids": dict,
    "context_length": int,
    "target_offset": int,
    "prediction_length": int,
    "pad_input": str,
    "outputs": dict,
}


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
    layouts = dict.fromkeys(spec.interface_columns[c].layout for c in interface.input_columns)
    depth_layouts = {layout: dict(metadata.depth_layouts[layout]) for layout in layouts if layout is not None}
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
        "depth_layouts": depth_layouts,
        "pad_input": PAD_INPUT,
        "outputs": outputs,
    }


def graph_inputs(contract: dict[str, Any]) -> list[str]:
    """The model's tensor inputs before the padding lengths: every input column, then the valid-slot mask
    [batch, context, capacity] of each depth layout it reads (deep columns are [batch, context, capacity] too)."""
    return list(contract["input_columns"]) + [depth_mask_input(layout) for layout in contract.get("depth_layouts", {})]


def encode(contract: dict[str, Any]) -> str:
    return json.dumps(contract, sort_keys=True)


def decode(text: str, where: str = "contract") -> dict[str, Any]:
    """The contract of `text`, checked; version-1 contracts (generative, no dropout, default special tokens) get
    today's keys. A malformed contract is a UserError naming `where` (the artifact) and what is wrong.
    """
    if len(text) > MAX_CONTRACT_CHARS:
        raise UserError(where, f"malformed execution contract: longer than {MAX_CONTRACT_CHARS} characters")
    try:
        contract = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(
            where, f"malformed execution contract: not JSON ({error.msg} at line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise UserError(where, "malformed execution contract: nested too deeply") from None
    if isinstance(contract, dict) and contract.get("version") == 1:
        contract.update(
            artifact="generative",
            dropout="inactive",
            special_token_ids=dict(SPECIAL_TOKEN_IDS),
            decoder_special_tokens={},
        )
    check_contract(contract, where)
    return contract


def _nesting(value: Any) -> int:
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_NESTING:
                pending += [(child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)]
    return deepest


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _names(value: Any) -> bool:
    """A list of distinct strings."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _check_column(name: str, column: Any, problem) -> None:
    if not isinstance(column, dict) or column.get("kind") not in KINDS:
        raise problem(f"columns.{name}.kind must be one of {', '.join(KINDS)}")
    if "data_type" in column and not isinstance(column["data_type"], str):
        raise problem(f"columns.{name}.data_type must be a string")
    if column["kind"] == "real":
        statistics = column.get("statistics")
        numbers = isinstance(statistics, dict) and all(
            isinstance(statistics.get(k), (int, float)) and not isinstance(statistics.get(k), bool)
            for k in ("mean", "std")
        )
        if statistics is not None and not (
            numbers and math.isfinite(statistics["mean"]) and math.isfinite(statistics["std"])
        ):
            raise problem(f"columns.{name}.statistics must be null or {{mean, std}} finite numbers")
        return
    n_classes, id_map = column.get("n_classes"), column.get("id_map")
    if not _is_int(n_classes) or not len(SPECIAL_TOKEN_IDS) <= n_classes <= MAX_CLASSES:
        raise problem(f"columns.{name}.n_classes must be an integer from {len(SPECIAL_TOKEN_IDS)} to {MAX_CLASSES}")
    if not isinstance(id_map, dict) or not all(_is_int(i) for i in id_map.values()):
        raise problem(f"columns.{name}.id_map must map raw values to integer ids")
    try:
        check_id_map("contract", name, id_map, n_classes)
    except UserError as error:
        raise problem(error.problem) from None


def check_contract(contract: Any, where: str) -> None:
    """Types, required keys, sizes and nesting of a contract read from a file; UserError naming `where`."""

    def problem(text: str) -> UserError:
        return UserError(where, f"malformed execution contract: {text}")

    if not isinstance(contract, dict):
        raise problem("not a JSON object")
    if _nesting(contract) > MAX_NESTING:
        raise problem(f"nested deeper than {MAX_NESTING} levels")
    for key, kind in FIELD_TYPES.items():
        if key not in contract:
            raise problem(f"{key} is missing")
        value = contract[key]
        if not isinstance(value, kind) or (kind is int and not _is_int(value)):
            raise problem(f"{key} must be {'an integer' if kind is int else f'a {kind.__name__}'}, got {value!r:.60}")
    if contract["version"] not in (1, CONTRACT_VERSION):
        raise problem(f"version {contract['version']} is not supported (this sequifier reads 1 and {CONTRACT_VERSION})")
    if not all(isinstance(k, str) and _is_int(v) and v >= 0 for k, v in contract["special_token_ids"].items()):
        raise problem("special_token_ids must map token names to ids >= 0")
    if contract["artifact"] not in ARTIFACTS or contract["dropout"] not in DROPOUT_MODES:
        raise problem(f"artifact must be one of {ARTIFACTS} and dropout one of {DROPOUT_MODES}")
    inputs, targets, columns = contract["input_columns"], contract["target_columns"], contract["columns"]
    if not (_names(inputs) and inputs and _names(targets)):
        raise problem("input_columns (not empty) and target_columns must be lists of distinct names")
    for name in [*inputs, *targets]:
        if name not in columns:
            raise problem(f"columns has no entry for {name!r}")
        if (naming := column_name_problem(name)) is not None:
            raise problem(f"the column name {name!r} {naming}")
        _check_column(name, columns[name], problem)
    if not 1 <= contract["context_length"] <= MAX_CONTEXT_LENGTH:
        raise problem(f"context_length must be from 1 to {MAX_CONTEXT_LENGTH}")
    if not 1 <= contract["prediction_length"] <= contract["context_length"]:
        raise problem("prediction_length must be from 1 to context_length")
    if contract["target_offset"] < 1:
        raise problem(f"target_offset must be at least 1, as training writes it, got {contract['target_offset']}")
    if contract["objective"] not in TRAINING_OBJECTIVES:
        raise problem(f"objective must be one of {', '.join(TRAINING_OBJECTIVES)}, got {contract['objective']!r:.60}")
    if "embedding_dim" in contract and not (_is_int(contract["embedding_dim"]) and contract["embedding_dim"] >= 1):
        raise problem("embedding_dim must be a positive integer")
    layouts = contract.get("depth_layouts", {})
    if not isinstance(layouts, dict) or not all(
        isinstance(d, dict)
        and _names(d.get("columns"))
        and _is_int(d.get("context_length"))
        and d["context_length"] > 0
        for d in layouts.values()
    ):
        raise problem("depth_layouts must map layout names to {columns, context_length > 0}")
    for target in targets:
        if columns[target]["kind"] != "categorical":
            continue
        ids = contract["class_ids"].get(target)
        n_classes = columns[target]["n_classes"]
        if not isinstance(ids, list) or not ids or not all(_is_int(i) and 0 <= i < n_classes for i in ids):
            raise problem(f"class_ids.{target} must list class ids below n_classes ({n_classes})")
    outputs = contract["outputs"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in outputs.items()):
        raise problem("outputs must map names to strings")
    expected = set(targets) if contract["artifact"] != "embedding" else set()
    if contract["artifact"] != "generative":
        expected.add("embedding")
    if set(outputs) != expected:
        raise problem(f"outputs must name {sorted(expected)}, names {sorted(outputs)}")
