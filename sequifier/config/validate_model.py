"""Rules of the model section: backbone shape, interfaces, ingestion trees and initialization overrides."""

from __future__ import annotations

import math
from dataclasses import fields

from sequifier.config.errors import did_you_mean
from sequifier.config.schema import (
    PARAMETER_GROUPS,
    SPECIAL_TOKENS,
    ArchitectureConfig,
    IngestionConfig,
    InterfaceConfig,
    ModelConfig,
)
from sequifier.config.typed import ProblemList, yaml_shown

MAX_SEED = 2**63 - 1
INIT_ARGUMENTS = {  # the arguments each initializer reads (model/initialization.py)
    "xavier_uniform": ("gain",),
    "xavier_normal": ("gain",),
    "kaiming_uniform": ("a", "mode", "nonlinearity"),
    "kaiming_normal": ("a", "mode", "nonlinearity"),
    "normal": ("mean", "std"),
    "trunc_normal": ("mean", "std", "a", "b"),
    "uniform": ("a", "b"),
    "constant": ("value",),
}


def check_model(model: ModelConfig, context_length: int, problems: ProblemList) -> None:
    check_architecture(model.backbone.architecture, "model.backbone.architecture", problems)
    max_context = model.backbone.architecture.max_context_length
    if max_context is not None and max_context < context_length:
        problems.add(
            "model.backbone.architecture.max_context_length",
            f"{max_context} is shorter than global_training.context_length {context_length}",
        )
    _check_initialization(model.backbone, "model.backbone", problems)
    if not model.interfaces:
        problems.add("model.interfaces", "at least one interface is required")
    for name, interface in model.interfaces.items():
        _check_interface(interface, f"model.interfaces.{name}", context_length, problems)


def check_selectors(selectors: tuple[str, ...], where: str, problems: ProblemList) -> None:
    """Selectors name a semantic parameter group, or a dotted prefix of one (`feed_forward`)."""
    prefixes = {group.rsplit(".", 1)[0] for group in PARAMETER_GROUPS if "." in group}
    for selector in selectors:
        if not any(group == selector or group.startswith(selector + ".") for group in PARAMETER_GROUPS):
            allowed = ", ".join(PARAMETER_GROUPS)
            problems.add(
                where,
                f"{selector!r} is not a parameter group; choose from {allowed}"
                + did_you_mean(selector, sorted(prefixes) + list(PARAMETER_GROUPS)),
            )


def check_architecture(architecture: ArchitectureConfig, path: str, problems: ProblemList) -> None:
    attention = architecture.attention
    where = f"{path}.attention"
    if architecture.dim_model < 1:
        problems.add(f"{path}.dim_model", f"must be positive, got {architecture.dim_model}")
        return
    if attention.n_heads < 1:
        problems.add(f"{where}.n_heads", f"must be at least 1, got {attention.n_heads}")
        return
    if architecture.dim_model % attention.n_heads:
        problems.add(f"{where}.n_heads", f"{attention.n_heads} does not divide dim_model {architecture.dim_model}")
        return
    kv = attention.n_kv_heads
    divides = isinstance(kv, int) and kv >= 1 and attention.n_heads % kv == 0
    as_gqa = (
        f"use type gqa for {kv}"
        if divides
        else f"type gqa would need a divisor of n_heads {attention.n_heads}, which {kv} is not"
    )
    if attention.type == "mha" and kv not in (None, attention.n_heads):
        problems.add(
            f"{where}.n_kv_heads", f"mha uses one key/value head per query head ({attention.n_heads}); {as_gqa}"
        )
    elif attention.type == "mqa" and kv not in (None, 1):
        problems.add(f"{where}.n_kv_heads", f"mqa shares one key/value head; got {kv} ({as_gqa})")
    elif attention.type == "gqa" and kv is None:
        problems.add(f"{where}.n_kv_heads", "gqa needs n_kv_heads (a divisor of n_heads)")
    elif kv is not None and (kv < 1 or attention.n_heads % kv):
        problems.add(f"{where}.n_kv_heads", f"{kv} does not divide n_heads {attention.n_heads}")
    head_dim = architecture.dim_model // attention.n_heads
    if architecture.position_encoding.theta <= 0:
        problems.add(f"{path}.position_encoding.theta", f"must be positive, got {architecture.position_encoding.theta}")
    if architecture.position_encoding.type == "rope" and head_dim % 2:
        problems.add(
            f"{path}.position_encoding.type", f"rope needs an even head width; dim_model/n_heads is {head_dim}"
        )
    if architecture.position_encoding.type == "sinusoidal" and architecture.positional_encoding_scope == "per_feature":
        problems.add(
            f"{path}.positional_encoding_scope",
            "sinusoidal positions are fixed and added once in the backbone; use global or leave it out "
            "(per_feature needs learned positions)",
        )
    if architecture.num_layers < 1:
        problems.add(f"{path}.num_layers", f"must be at least 1, got {architecture.num_layers}")
    if architecture.feed_forward.dim is not None and architecture.feed_forward.dim < 1:
        problems.add(f"{path}.feed_forward.dim", f"must be positive, got {architecture.feed_forward.dim}")
    if not 0.0 <= architecture.dropout < 1.0:
        problems.add(f"{path}.dropout", f"must be in [0, 1), got {architecture.dropout}")
    _check_layer_groups(architecture, f"{path}.shared_layer_groups", problems)


def _check_layer_groups(architecture: ArchitectureConfig, where: str, problems: ProblemList) -> None:
    seen: set[int] = set()
    for i, group in enumerate(architecture.shared_layer_groups):
        if not isinstance(group, (list, tuple)) or len(group) < 2:
            problems.add(f"{where}[{i}]", f"must list at least two layer indices, got {group!r}")
            continue
        not_indices = [x for x in group if not isinstance(x, int) or isinstance(x, bool)]
        if not_indices:
            problems.add(f"{where}[{i}]", f"expected integer layer indices, got {yaml_shown(not_indices[0])}")
            continue
        repeated = sorted({layer for layer in group if group.count(layer) > 1})
        if repeated:
            problems.add(f"{where}[{i}]", f"lists layer {repeated[0]} more than once")
            continue
        for layer in group:
            if not 0 <= layer < architecture.num_layers:
                problems.add(f"{where}[{i}]", f"layer {layer} does not exist (num_layers {architecture.num_layers})")
            elif layer in seen:
                problems.add(f"{where}[{i}]", f"layer {layer} is in more than one group")
            seen.add(layer)


def _check_initialization(node, path: str, problems: ProblemList) -> None:
    seed = getattr(node, "initialization_seed", None)  # a decoder has overrides but no seed
    if seed is not None and not 0 <= seed <= MAX_SEED:
        problems.add(f"{path}.initialization_seed", f"must be an integer from 0 to 2**63-1, got {seed}")
    for group, targets in (node.initialization or {}).items():
        check_selectors((group,), f"{path}.initialization.{group}", problems)
        for target in ("weight", "bias"):
            method = getattr(targets, target)
            if method is not None:
                _check_init_method(method, f"{path}.initialization.{group}.{target}", problems)


def _check_init_method(method, where: str, problems: ProblemList) -> None:
    takes = INIT_ARGUMENTS.get(method.method, ())
    for argument in (field.name for field in fields(method) if field.name != "method"):
        if getattr(method, argument) is not None and argument not in takes:
            problems.add(
                f"{where}.{argument}",
                f"is not an argument of {method.method}, which takes "
                + (", ".join(takes) if takes else "none")
                + _methods_taking(argument),
            )
    if method.method == "constant" and method.value is None:
        problems.add(f"{where}.value", "constant needs the value to set")
    if method.std is not None and not 0 <= method.std < math.inf:
        problems.add(f"{where}.std", f"must be a finite number >= 0, got {method.std}")
    bounds = {"uniform": (-0.1, 0.1), "trunc_normal": (-2 * (method.std or 0.02), 2 * (method.std or 0.02))}
    if method.method in bounds:
        low = bounds[method.method][0] if method.a is None else method.a
        high = bounds[method.method][1] if method.b is None else method.b
        if not low < high:
            problems.add(f"{where}.a", f"the lower bound a ({low}) must be below the upper bound b ({high})")


def _methods_taking(argument: str) -> str:
    methods = [name for name, takes in INIT_ARGUMENTS.items() if argument in takes]
    return f" ({argument} belongs to {', '.join(methods)})"


def _check_interface(interface: InterfaceConfig, path: str, context_length: int, problems: ProblemList) -> None:
    for role in ("input_columns", "target_columns"):
        columns = getattr(interface, role)
        if not columns:
            problems.add(f"{path}.{role}", "must name at least one column")
        duplicates = sorted({c for c in columns if columns.count(c) > 1})
        if duplicates:
            problems.add(f"{path}.{role}", f"lists {', '.join(duplicates)} more than once")
    for target, tokens in (interface.categorical_decoder_special_tokens or {}).items():
        where = f"{path}.categorical_decoder_special_tokens.{target}"
        if target not in interface.target_columns:
            problems.add(where, "is not a target column of this interface")
        for token in tokens:
            if token not in SPECIAL_TOKENS:
                problems.add(
                    where,
                    f"{token!r} is not a special token; choose from {', '.join(SPECIAL_TOKENS)}"
                    + did_you_mean(token, SPECIAL_TOKENS),
                )
    decoder = interface.decoder
    if context_length < 1:
        return  # global_training.context_length is refused on its own; its bounds would only repeat that
    if not 1 <= decoder.prediction_length <= context_length:
        problems.add(
            f"{path}.decoder.prediction_length",
            f"must be between 1 and context_length {context_length}, got {decoder.prediction_length}",
        )
    elif decoder.support < 1:
        problems.add(f"{path}.decoder.support", f"must be at least 1, got {decoder.support}")
    elif decoder.prediction_length + decoder.support - 1 > context_length:
        problems.add(
            f"{path}.decoder.support",
            f"each of the {decoder.prediction_length} predicted positions reads {decoder.support} states, so "
            f"prediction_length + support - 1 must not exceed context_length {context_length}",
        )
    for index, width in enumerate(decoder.hidden_dims or ()):
        if width < 1:
            problems.add(f"{path}.decoder.hidden_dims[{index}]", f"must be positive, got {width}")
    if decoder.type != "mlp":
        for key, default, what in (
            ("hidden_dims", None, "hidden layers"),
            ("activation", "relu", "an activation"),
            ("dropout", 0.0, "a dropout"),
            ("hidden_weight_l2", 0.0, "hidden weights to penalize"),
        ):
            if getattr(decoder, key) != default:
                problems.add(f"{path}.decoder.{key}", f"only an mlp decoder has {what}")
    if not 0.0 <= decoder.dropout < 1.0:
        problems.add(f"{path}.decoder.dropout", f"must be in [0, 1), got {decoder.dropout}")
    if decoder.hidden_weight_l2 < 0:
        problems.add(f"{path}.decoder.hidden_weight_l2", f"must not be negative, got {decoder.hidden_weight_l2}")
    _check_initialization(decoder, f"{path}.decoder", problems)
    _check_ingestion(interface.ingestion, f"{path}.ingestion", set(interface.input_columns), problems, root=True)


def _check_ingestion(node: IngestionConfig, path: str, inputs: set[str], problems: ProblemList, root: bool) -> set[str]:
    """Check one node of the ingestion tree; returns the columns it reads."""
    if not root:
        for key in ("allow_unused_input_columns", "auxiliary_input_columns"):
            if getattr(node, key):
                problems.add(f"{path}.{key}", "belongs at the root ingestion only")
    if node.output_dim is not None and node.output_dim < 1:
        problems.add(f"{path}.output_dim", f"must be positive, got {node.output_dim}")
    if not 0.0 <= node.dropout < 1.0:
        problems.add(f"{path}.dropout", f"must be in [0, 1), got {node.dropout}")
    _check_initialization(node, path, problems)
    if node.type == "composite":
        return _check_composite(node, path, inputs, problems, root)
    for key in ("branches", "merge"):
        if getattr(node, key) is not None:
            problems.add(f"{path}.{key}", f"only a composite ingestion has {key}; this node is {node.type}")
    columns = set(node.columns) if node.columns is not None else (set() if not root else inputs)
    if not root and node.columns is None:
        problems.add(f"{path}.columns", "a branch must name the columns it reads")
    for column in sorted(columns - inputs):
        problems.add(f"{path}.columns", f"{column!r} is not an input column of the interface")
    for column in sorted(set(node.feature_embedding_dims or {}) - columns):
        problems.add(f"{path}.feature_embedding_dims.{column}", "is not a column this ingestion reads")
    if node.type == "depth_transformer":
        if node.layout is None:
            problems.add(f"{path}.layout", "a depth_transformer needs the name of its depth layout")
        if node.architecture is None:
            problems.add(f"{path}.architecture", "a depth_transformer needs its own architecture")
        else:
            check_architecture(node.architecture, f"{path}.architecture", problems)
            for key in ("max_context_length", "positional_encoding_scope"):
                if getattr(node.architecture, key) is not None:
                    problems.add(
                        f"{path}.architecture.{key}",
                        "does not apply to a depth encoder: it reads the CLS and the layout's child slots "
                        "(capacity + 1 positions)",
                    )
    elif node.architecture is not None or node.layout is not None:
        problems.add(path, "layout and architecture belong to a depth_transformer")
    if root:
        _check_unused(node, path, columns, inputs, problems)
    return columns


def _check_composite(node: IngestionConfig, path: str, inputs: set[str], problems: ProblemList, root: bool) -> set[str]:
    if not node.branches:
        problems.add(f"{path}.branches", "a composite needs at least one branch")
        return set()
    if not root and node.output_dim is None:
        problems.add(f"{path}.output_dim", "a nested composite needs output_dim")
    read: set[str] = set()
    for name, child in node.branches.items():
        columns = _check_ingestion(child, f"{path}.branches.{name}", inputs, problems, root=False)
        shared = sorted(read & columns)
        if shared and not node.allow_shared_columns:
            problems.add(
                f"{path}.branches.{name}",
                f"reads {', '.join(shared)} already read by a sibling; set allow_shared_columns: true on {path}",
            )
        read |= columns
    if root:
        _check_unused(node, path, read, inputs, problems)
    return read


def _check_unused(node: IngestionConfig, path: str, read: set[str], inputs: set[str], problems: ProblemList) -> None:
    auxiliary = set(node.auxiliary_input_columns or ())
    for column in sorted(auxiliary - inputs):
        problems.add(f"{path}.auxiliary_input_columns", f"{column!r} is not an input column of the interface")
    unused = sorted(inputs - read - auxiliary)
    if unused and not node.allow_unused_input_columns:
        problems.add(
            path,
            (
                f"input columns {', '.join(unused)} are read by no branch; "
                "list them in auxiliary_input_columns or set allow_unused_input_columns: true"
            ),
        )
