"""Invalid train configs: every rule of the train guide and of the config system, one row each.

Each row mutates a valid config (the tiny singleton config of conftest, or its canonical twin
below) and names the canonical path and a fragment of the message the user must see. Rows of
the first table fail in `canonical_config` (expansion + validation); rows of the second need the
preprocessing metadata and fail in `resolve`. A few rows also go through the real CLI.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
from conftest import run_sequifier, tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.training.capabilities import check_supported

METADATA = "configs/metadata_configs/events.json"
DROP = object()  # a change that removes the field


def canonical_twin() -> dict:
    """The tiny config written canonically, with names that differ from the expansion's `default`."""
    config = tiny_train_config()
    config["model"]["interfaces"] = {"main": config["model"].pop("interface")}
    dataset = config.pop("dataset")
    config["dataset_training"] = {
        "events": {"model_interface": "main", "parts": {"main": dataset["part"]}, "criterion": dataset["criterion"]},
    }
    config["training_plan"] = {
        "phases": [{"name": "train", "epochs": 1, "mode": "sequential", "sources": [{"source": "events"}]}]
    }
    config["evaluation"] = {"sources": [{"source": "events"}]}
    return config


BASES: dict[str, Callable[[], dict]] = {"singleton": tiny_train_config, "canonical": canonical_twin}


def _segments(path: str) -> list[Any]:
    return [int(s) if s.isdigit() else s for s in path.split(".")]


def apply(config: dict, changes: dict[str, Any]) -> dict:
    """Set (or with DROP remove) each dotted path; integer segments index lists, missing mappings are created."""
    for path, value in changes.items():
        *parents, last = _segments(path)
        node: Any = config
        for segment in parents:
            node = node[segment] if isinstance(node, list) else node.setdefault(segment, {})
        if value is DROP:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
    return config


def assert_reported(error: BaseException, path: str, fragment: str) -> None:
    """One line of the error is `path: ...fragment...`."""
    lines = str(error).splitlines()
    assert any(line.startswith(f"{path}: ") and fragment in line for line in lines), (
        f"expected '{path}: ...{fragment}...' in:\n{error}"
    )


def row(id: str, changes: dict[str, Any], path: str, fragment: str, base: str = "singleton"):
    return pytest.param(base, changes, path, fragment, id=id)


# Shapes reused by several rows.
SECOND_DATASET = {
    "parts": {"main": {"metadata_config_path": METADATA}},
    "criterion": {"event": "CrossEntropyLoss", "amount": "MSELoss"},
}
SECOND_INTERFACE = {"input_columns": ["event"], "target_columns": ["event"]}
ARCH = "model.backbone.architecture"
INGESTION = "model.interface.ingestion"
CANONICAL_INGESTION = "model.interfaces.default.ingestion"
COMPOSITE = {
    "type": "composite",
    "branches": {
        "item": {"type": "embedding", "columns": ["event", "channel"], "output_dim": 8},
        "value": {"type": "embedding", "columns": ["amount"], "output_dim": 8},
    },
    "merge": {"type": "concat"},
}
DEPTH_ARCHITECTURE = {
    "dim_model": 8,
    "num_layers": 1,
    "attention": {"type": "mha", "n_heads": 2},
    "position_encoding": {"type": "learned"},
}
DEPTH_BRANCH = {
    "type": "depth_transformer",
    "layout": "items",
    "columns": ["amount"],
    "output_dim": 8,
    "architecture": DEPTH_ARCHITECTURE,
}
QKV_NORMAL = {"weight": {"method": "normal", "std": 0.02}}


def composite(**branch_changes: Any) -> dict:
    """COMPOSITE with branches replaced (None removes one)."""
    node = copy.deepcopy(COMPOSITE)
    for name, branch in branch_changes.items():
        if branch is None:
            del node["branches"][name]
        else:
            node["branches"][name] = copy.deepcopy(branch)
    return node


VALIDATION_ROWS = [
    # --- unknown fields at every level, with did-you-mean -------------------------------------------------------
    row("unknown-top-level", {"model_nam": "x"}, "model_nam", "unknown field (did you mean 'model_name'?)"),
    row(
        "unknown-global-training",
        {"global_training.batch_sise": 8},
        "global_training.batch_sise",
        "did you mean 'batch_size'?",
    ),
    row(
        "unknown-backbone",
        {"model.backbone.initialisation_seed": 3},
        "model.backbone.initialisation_seed",
        "did you mean 'initialization_seed'?",
    ),
    row("unknown-architecture", {f"{ARCH}.num_layer": 2}, f"{ARCH}.num_layer", "did you mean 'num_layers'?"),
    row("unknown-attention", {f"{ARCH}.attention.n_head": 2}, f"{ARCH}.attention.n_head", "did you mean 'n_heads'?"),
    row(
        "unknown-feed-forward",
        {f"{ARCH}.feed_forward.activaton": "gelu"},
        f"{ARCH}.feed_forward.activaton",
        "did you mean 'activation'?",
    ),
    row(
        "unknown-normalization",
        {f"{ARCH}.normalization.norm_frist": True},
        f"{ARCH}.normalization.norm_frist",
        "did you mean 'norm_first'?",
    ),
    row(
        "unknown-position-encoding",
        {f"{ARCH}.position_encoding.thetta": 500.0},
        f"{ARCH}.position_encoding.thetta",
        "did you mean 'theta'?",
    ),
    row("unknown-model", {"model.interfacess": {}}, "model.interfacess", "did you mean 'interfaces'?"),
    row(
        "unknown-interface",
        {"model.interface.input_column": ["event"]},
        "model.interfaces.default.input_column",
        "did you mean 'input_columns'?",
    ),
    row(
        "unknown-ingestion",
        {f"{INGESTION}.output_dims": 16},
        f"{CANONICAL_INGESTION}.output_dims",
        "did you mean 'output_dim'?",
    ),
    row(
        "unknown-decoder",
        {"model.interface.decoder.prediction_lenght": 1},
        "model.interfaces.default.decoder.prediction_lenght",
        "did you mean 'prediction_length'?",
    ),
    row(
        "unknown-dataset",
        {"dataset.loss_weight": {"event": 1.0}},
        "dataset_training.default.loss_weight",
        "did you mean 'loss_weights'?",
    ),
    row(
        "unknown-part",
        {"dataset.part.metadata_path": METADATA},
        "dataset_training.default.parts.default.metadata_path",
        "did you mean 'metadata_config_path'?",
    ),
    row(
        "unknown-freeze-scope",
        {"dataset.freeze": {"backbon": {"freeze": []}}},
        "dataset_training.default.freeze.backbon",
        "did you mean 'backbone'?",
    ),
    row(
        "unknown-freeze-policy",
        {"dataset.freeze": {"backbone": {"freezing": ["attention.qkv"]}}},
        "dataset_training.default.freeze.backbone.freezing",
        "did you mean 'freeze'?",
    ),
    row(
        "unknown-init-target",
        {"model.backbone.initialization": {"attention.qkv": {"weights": {"method": "normal"}}}},
        "model.backbone.initialization.attention.qkv.weights",
        "did you mean 'weight'?",
    ),
    row(
        "unknown-init-argument",
        {"model.backbone.initialization": {"attention.qkv": {"weight": {"method": "normal", "stdev": 0.02}}}},
        "model.backbone.initialization.attention.qkv.weight.stdev",
        "did you mean 'std'?",
    ),
    row(
        "unknown-training-plan",
        {"training_plan.phase": []},
        "training_plan.phase",
        "did you mean 'phases'?",
        base="canonical",
    ),
    row(
        "unknown-phase",
        {"training_plan.phases.0.epoch": 2},
        "training_plan.phases[0].epoch",
        "did you mean 'epochs'?",
        base="canonical",
    ),
    row(
        "unknown-source",
        {"training_plan.phases.0.sources.0.batch_per_selection": 2},
        "training_plan.phases[0].sources[0].batch_per_selection",
        "did you mean 'batches_per_selection'?",
        base="canonical",
    ),
    row(
        "unknown-evaluation",
        {"evaluation.monitr": {"source": "events"}},
        "evaluation.monitr",
        "did you mean 'monitor'?",
        base="canonical",
    ),
    row(
        "unknown-monitor",
        {"evaluation.monitor": {"source": "events", "metrc": "loss"}},
        "evaluation.monitor.metrc",
        "did you mean 'metric'?",
        base="canonical",
    ),
    row("missing-required-top-level", {"model_name": DROP}, "model_name", "required field is missing"),
    row(
        "missing-required-context-length",
        {"global_training.context_length": DROP},
        "global_training.context_length",
        "required field is missing",
    ),
    # --- wrong types --------------------------------------------------------------------------------------------
    row(
        "type-batch-size-string",
        {"global_training.batch_size": "64"},
        "global_training.batch_size",
        "expected an integer, got '64'",
    ),
    row(
        "type-learning-rate-string",
        {"global_training.learning_rate": "fast"},
        "global_training.learning_rate",
        "expected a number, got 'fast'",
    ),
    row("type-seed-float", {"seed": 1.5}, "seed", "expected an integer, got 1.5"),
    row("type-bool-string", {"export_onnx": "yes"}, "export_onnx", "expected true or false, got 'yes'"),
    row(
        "type-columns-string",
        {"model.interface.input_columns": "event"},
        "model.interfaces.default.input_columns",
        "expected a list, got 'event'",
    ),
    row(
        "type-criterion-list",
        {"dataset.criterion": ["CrossEntropyLoss"]},
        "dataset_training.default.criterion",
        "expected a mapping, got a list",
    ),
    row("type-evaluation-string", {"evaluation": "yes"}, "evaluation", "expected a mapping of fields, got 'yes'"),
    row("type-architecture-scalar", {ARCH: 16}, ARCH, "expected a mapping of fields, got 16"),
    row(
        "type-epochs-string",
        {"training_plan.epochs": "five"},
        "training_plan.phases[0].epochs",
        "expected an integer, got 'five'",
    ),
    row("type-dropout-string", {f"{ARCH}.dropout": "high"}, f"{ARCH}.dropout", "expected a number, got 'high'"),
    # --- disallowed choices -------------------------------------------------------------------------------------
    row(
        "choice-attention-type",
        {f"{ARCH}.attention.type": "multihead"},
        f"{ARCH}.attention.type",
        "'multihead' is not allowed; choose one of 'mha', 'mqa', 'gqa'",
    ),
    row(
        "choice-activation",
        {f"{ARCH}.feed_forward.activation": "gelu2"},
        f"{ARCH}.feed_forward.activation",
        "did you mean 'gelu'?",
    ),
    row(
        "choice-normalization",
        {f"{ARCH}.normalization.type": "batchnorm"},
        f"{ARCH}.normalization.type",
        "is not allowed; choose one of 'rmsnorm', 'layernorm'",
    ),
    row(
        "choice-position-encoding",
        {f"{ARCH}.position_encoding.type": "alibi"},
        f"{ARCH}.position_encoding.type",
        "choose one of 'learned', 'rope', 'sinusoidal'",
    ),
    row(
        "choice-read-format",
        {"global_training.read_format": "feather"},
        "global_training.read_format",
        "choose one of 'parquet', 'pt'",
    ),
    row(
        "choice-training-objective",
        {"global_training.training_objective": "bert"},
        "global_training.training_objective",
        "'bert' is not allowed",
    ),
    row(
        "choice-scheduler-step-on",
        {"global_training.scheduler_step_on": "step"},
        "global_training.scheduler_step_on",
        "choose one of 'epoch', 'batch'",
    ),
    row(
        "choice-of-another-type",
        {"global_training.scheduler_step_on": 1},
        "global_training.scheduler_step_on",
        "expected a string, got 1; choose one of 'epoch', 'batch'",
    ),
    row(
        "choice-in-other-letter-case",
        {"global_training.autocast": "BF16"},
        "global_training.autocast",
        "(did you mean 'bf16'?)",
    ),
    row(
        "choice-refusal-lists-the-other-spellings",
        {"global_training.autocast": "fp33"},
        "global_training.autocast",
        "(also accepted: 'bfloat16' for 'bf16', 'float16' for 'fp16', 'fp32' for null, 'float32' for null, "
        "'none' for null)",
    ),
    row(
        "choice-data-parallelism",
        {"global_training.data_parallelism": "zero"},
        "global_training.data_parallelism",
        "choose one of 'ddp', 'fsdp'",
    ),
    row(
        "choice-backend", {"global_training.backend": "mpi"}, "global_training.backend", "choose one of 'gloo', 'nccl'"
    ),
    row(
        "choice-torch-compile",
        {"global_training.torch_compile": "full"},
        "global_training.torch_compile",
        "choose one of 'none', 'outer', 'inner'",
    ),
    row(
        "choice-ingestion-type",
        {f"{INGESTION}.type": "linear"},
        f"{CANONICAL_INGESTION}.type",
        "choose one of 'embedding', 'composite', 'depth_transformer'",
    ),
    row(
        "choice-decoder-type",
        {"model.interface.decoder.type": "conv"},
        "model.interfaces.default.decoder.type",
        "choose one of 'linear', 'mlp'",
    ),
    row(
        "choice-merge-type",
        {f"{INGESTION}": composite() | {"merge": {"type": "mean"}}},
        f"{CANONICAL_INGESTION}.merge.type",
        "'mean' is not allowed",
    ),
    row(
        "choice-file-order",
        {"dataset.part.file_order": "random"},
        "dataset_training.default.parts.default.file_order",
        "choose one of 'shuffled', 'name'",
    ),
    row(
        "choice-phase-mode",
        {"training_plan.phases.0.mode": "parallel"},
        "training_plan.phases[0].mode",
        "choose one of 'sequential', 'interleaved'",
        base="canonical",
    ),
    row(
        "choice-phase-selection",
        {"training_plan.phases.0.selection": "random"},
        "training_plan.phases[0].selection",
        "choose one of 'round_robin', 'weighted_random'",
        base="canonical",
    ),
    row(
        "choice-monitor-mode",
        {"evaluation.monitor": {"source": "events", "mode": "lowest"}},
        "evaluation.monitor.mode",
        "choose one of 'min', 'max'",
        base="canonical",
    ),
    row(
        "choice-monitor-metric",
        {"evaluation.monitor": {"source": "events", "metric": "accuracy"}},
        "evaluation.monitor.metric",
        "'accuracy' is not allowed",
        base="canonical",
    ),
    row(
        "choice-init-method",
        {"model.backbone.initialization": {"attention.qkv": {"weight": {"method": "he"}}}},
        "model.backbone.initialization.attention.qkv.weight.method",
        "'he' is not allowed; choose one of 'xavier_uniform'",
    ),
    # --- the historical flat schema -----------------------------------------------------------------------------
    row(
        "historical-training-spec",
        {"training_spec": {"batch_size": 16}},
        "training_spec",
        "the flat training schema is not accepted; this belongs in global_training",
    ),
    row(
        "historical-model-spec",
        {"model_spec": {"d_model": 16}},
        "model_spec",
        "this belongs in model.backbone.architecture",
    ),
    row("historical-data-path", {"data_path": "data/events-split0.parquet"}, "data_path", "the metadata's split_paths"),
    row(
        "historical-input-columns",
        {"input_columns": ["event"]},
        "input_columns",
        "this belongs in model.interfaces.<name>.input_columns",
    ),
    row(
        "historical-metadata-path",
        {"metadata_config_path": METADATA},
        "metadata_config_path",
        "dataset_training.<name>.parts.<part>.metadata_config_path",
    ),
    row(
        "historical-model-ingestion",
        {"model.ingestion": {"type": "embedding"}},
        "model.ingestion",
        "belongs to an interface: model.interfaces.<name>.ingestion",
    ),
    row(
        "historical-model-decoder",
        {"model.decoder": {"type": "linear"}},
        "model.decoder",
        "model.interfaces.<name>.decoder",
    ),
    row(
        "historical-architecture-freeze",
        {f"{ARCH}.freeze": ["attention.qkv"]},
        f"{ARCH}.freeze",
        "freezing is owned by datasets: dataset_training.<name>.freeze.backbone",
    ),
    # --- singular and plural spellings at one level --------------------------------------------------------------
    row(
        "both-interface-spellings",
        {"model.interfaces": {"other": SECOND_INTERFACE}},
        "model.interface",
        "cannot be combined with model.interfaces",
    ),
    row(
        "both-dataset-spellings",
        {"dataset_training": {"other": SECOND_DATASET}},
        "dataset",
        "cannot be combined with dataset_training",
    ),
    row(
        "both-part-spellings",
        {"dataset.parts": {"other": {"metadata_config_path": METADATA}}},
        "dataset_training.default.part",
        "cannot be combined with dataset_training.default.parts",
    ),
    row(
        "both-plan-spellings",
        {"training_plan.epochs": 3},
        "training_plan.epochs",
        "cannot be combined with training_plan.phases",
        base="canonical",
    ),
    # --- inference of the single interface and source -------------------------------------------------------------
    row(
        "infer-plan-source-several-datasets",
        {"dataset_training.telemetry": SECOND_DATASET, "training_plan": {"epochs": 1}},
        "training_plan.epochs",
        "cannot infer the source",
        base="canonical",
    ),
    row(
        "infer-evaluation-source-several-datasets",
        {"dataset_training.telemetry": SECOND_DATASET, "evaluation": True},
        "evaluation",
        "cannot infer the source",
        base="canonical",
    ),
    row(
        "infer-interface-several-interfaces",
        {"model.interfaces.other": SECOND_INTERFACE, "dataset_training.events.model_interface": DROP},
        "dataset_training.events.model_interface",
        "required when the model has several interfaces",
        base="canonical",
    ),
    # a model section that is missing or misspelt is named itself, not through the interface it would have given
    row("misspelt-model-section", {"model": DROP, "models": {"backbone": {}}}, "models", "did you mean 'model'?"),
    row("missing-model-interface", {"model.interface": DROP}, "model.interfaces", "required field is missing"),
    row(
        "empty-model-interfaces",
        {"model.interface": DROP, "model.interfaces": {}},
        "model.interfaces",
        "at least one interface is required",
    ),
    row(
        "interfaces-holding-one-interfaces-fields",
        {"model.interfaces": {"input_columns": ["event"], "target_columns": ["event"]}, "model.interface": DROP},
        "model.interfaces.input_columns",
        "expected a mapping of fields, got a list",
    ),
    # --- references to interfaces, datasets and parts -------------------------------------------------------------
    row(
        "reference-unknown-interface",
        {"dataset_training.events.model_interface": "mian"},
        "dataset_training.events.model_interface",
        "unknown interface 'mian' (did you mean 'main'?)",
        base="canonical",
    ),
    row(
        "reference-plan-unknown-dataset",
        {"training_plan.phases.0.sources.0.source": "event"},
        "training_plan.phases[0].sources[0].source",
        "unknown dataset 'event' (did you mean 'events'?)",
        base="canonical",
    ),
    row(
        "reference-plan-unknown-part",
        {"training_plan.phases.0.sources.0.source": "events.mian"},
        "training_plan.phases[0].sources[0].source",
        "unknown part 'mian' of dataset 'events' (did you mean 'main'?)",
        base="canonical",
    ),
    row(
        "reference-evaluation-unknown-dataset",
        {"evaluation.sources.0.source": "evnts"},
        "evaluation.sources[0].source",
        "unknown dataset 'evnts' (did you mean 'events'?)",
        base="canonical",
    ),
    row(
        "reference-evaluation-unknown-part",
        {"evaluation.sources.0.source": "events.increment"},
        "evaluation.sources[0].source",
        "unknown part 'increment' of dataset 'events'",
        base="canonical",
    ),
    row(
        "reference-evaluation-source-twice",
        {"evaluation.sources": [{"source": "events"}, {"source": "events"}]},
        "evaluation.sources[1].source",
        "'events' is listed more than once",
        base="canonical",
    ),
    row(
        "reference-training-source-twice",
        {"training_plan.phases.0.sources": [{"source": "events.main"}, {"source": "events.main"}]},
        "training_plan.phases[0].sources[1].source",
        "'events.main' is listed more than once",
        base="canonical",
    ),
    row(
        "reference-training-dataset-and-its-part",
        {"training_plan.phases.0.sources": [{"source": "events"}, {"source": "events.main"}]},
        "training_plan.phases[0].sources[1].source",
        "'events.main' and 'events' overlap (a dataset stands for all its parts)",
        base="canonical",
    ),
    row(
        "reference-monitor-unknown",
        {"evaluation.monitor": {"source": "evnts"}},
        "evaluation.monitor.source",
        "'evnts' is not an evaluation source (events) (did you mean 'events'?)",
        base="canonical",
    ),
    row(
        "reference-monitor-not-evaluated",
        {"dataset_training.telemetry": SECOND_DATASET, "evaluation.monitor": {"source": "telemetry"}},
        "evaluation.monitor.source",
        "'telemetry' is not an evaluation source",
        base="canonical",
    ),
    # --- criterion and loss weights -----------------------------------------------------------------------------
    row(
        "criterion-missing",
        {"dataset.criterion.amount": DROP},
        "dataset_training.default.criterion",
        "missing a criterion for target 'amount'",
    ),
    row(
        "criterion-not-a-target",
        {"dataset.criterion.channel": "CrossEntropyLoss"},
        "dataset_training.default.criterion.channel",
        "is not a target of interface 'default'",
    ),
    row(
        "criterion-unknown",
        {"dataset.criterion.amount": "RMSELoss"},
        "dataset_training.default.criterion.amount",
        "'RMSELoss' is not allowed; choose one of CrossEntropyLoss, MSELoss",
    ),
    row(
        "criterion-misspelled",
        {"dataset.criterion.event": "CrossEntropy"},
        "dataset_training.default.criterion.event",
        "did you mean 'CrossEntropyLoss'?",
    ),
    row(
        "loss-weight-negative",
        {"dataset.loss_weights": {"event": 1.0, "amount": -0.5}},
        "dataset_training.default.loss_weights.amount",
        "must be >= 0, got -0.5",
    ),
    row(
        "loss-weight-unknown-target",
        {"dataset.loss_weights": {"channel": 1.0}},
        "dataset_training.default.loss_weights.channel",
        "is not a target of interface 'default'",
    ),
    row(
        "loss-weight-all-zero",
        {"dataset.loss_weights": {"event": 0.0, "amount": 0}},
        "dataset_training.default.loss_weights",
        "at least one target needs a positive weight",
    ),
    row(
        "class-share-not-a-target",
        {"dataset.class_share_log_columns": ["channel"]},
        "dataset_training.default.class_share_log_columns",
        "'channel' is not a target",
    ),
    # --- special tokens -----------------------------------------------------------------------------------------
    row(
        "special-token-unknown",
        {"model.interface.categorical_decoder_special_tokens": {"event": ["pad"]}},
        "model.interfaces.default.categorical_decoder_special_tokens.event",
        "'pad' is not a special token; choose from unknown, other, mask",
    ),
    row(
        "special-token-misspelled",
        {"model.interface.categorical_decoder_special_tokens": {"event": ["unkown"]}},
        "model.interfaces.default.categorical_decoder_special_tokens.event",
        "did you mean 'unknown'?",
    ),
    row(
        "special-token-not-a-target",
        {"model.interface.categorical_decoder_special_tokens": {"channel": ["other"]}},
        "model.interfaces.default.categorical_decoder_special_tokens.channel",
        "is not a target column of this interface",
    ),
    # --- backbone architecture ------------------------------------------------------------------------------------
    row(
        "heads-do-not-divide-dim-model",
        {f"{ARCH}.attention.n_heads": 3},
        f"{ARCH}.attention.n_heads",
        "3 does not divide dim_model 16",
    ),
    row("heads-zero", {f"{ARCH}.attention.n_heads": 0}, f"{ARCH}.attention.n_heads", "must be at least 1, got 0"),
    row(
        "kv-heads-do-not-divide-heads",
        {f"{ARCH}.attention": {"type": "gqa", "n_heads": 4, "n_kv_heads": 3}},
        f"{ARCH}.attention.n_kv_heads",
        "3 does not divide n_heads 4",
    ),
    row(
        "mha-with-fewer-kv-heads",
        {f"{ARCH}.attention.n_kv_heads": 1},
        f"{ARCH}.attention.n_kv_heads",
        "mha uses one key/value head per query head (2); use type gqa",
    ),
    row(
        "mha-with-kv-heads-no-gqa-takes",
        {f"{ARCH}.attention": {"type": "mha", "n_heads": 4, "n_kv_heads": 3}},
        f"{ARCH}.attention.n_kv_heads",
        "mha uses one key/value head per query head (4); type gqa would need a divisor of n_heads 4, which 3 is not",
    ),
    row(
        "mqa-with-kv-heads-no-gqa-takes",
        {f"{ARCH}.attention": {"type": "mqa", "n_heads": 4, "n_kv_heads": 3}},
        f"{ARCH}.attention.n_kv_heads",
        "mqa shares one key/value head; got 3 (type gqa would need a divisor of n_heads 4, which 3 is not)",
    ),
    row(
        "mqa-with-several-kv-heads",
        {f"{ARCH}.attention": {"type": "mqa", "n_heads": 4, "n_kv_heads": 2}},
        f"{ARCH}.attention.n_kv_heads",
        "mqa shares one key/value head",
    ),
    row(
        "gqa-without-kv-heads",
        {f"{ARCH}.attention": {"type": "gqa", "n_heads": 4}},
        f"{ARCH}.attention.n_kv_heads",
        "gqa needs n_kv_heads",
    ),
    row(
        "rope-odd-head-width",
        {f"{ARCH}.dim_model": 6},
        f"{ARCH}.position_encoding.type",
        "rope needs an even head width; dim_model/n_heads is 3",
    ),
    row("dropout-one", {f"{ARCH}.dropout": 1.0}, f"{ARCH}.dropout", "must be in [0, 1), got 1.0"),
    row("dropout-negative", {f"{ARCH}.dropout": -0.1}, f"{ARCH}.dropout", "must be in [0, 1), got -0.1"),
    row("num-layers-zero", {f"{ARCH}.num_layers": 0}, f"{ARCH}.num_layers", "must be at least 1, got 0"),
    row("seed-beyond-64-bits", {"seed": 2**64}, "seed", "must be a 64-bit integer"),
    row("seed-below-64-bits", {"seed": -(2**63) - 1}, "seed", "must be a 64-bit integer"),
    row(
        "batch-size-beyond-64-bits",
        {"global_training.batch_size": 10**30},
        "global_training.batch_size",
        f"must be a 64-bit integer, from -2**63 to 2**63-1, got {10**30}",
    ),
    row(
        "embedding-width-beyond-64-bits",
        {"model.interface.ingestion.feature_embedding_dims": {"event": 2**63, "channel": 4, "amount": 4}},
        "model.interfaces.default.ingestion.feature_embedding_dims.event",
        "must be a 64-bit integer, from -2**63 to 2**63-1",
    ),
    row(
        "shared-layers-unknown-index",
        {f"{ARCH}.shared_layer_groups": [[0, 5]]},
        f"{ARCH}.shared_layer_groups[0]",
        "layer 5 does not exist (num_layers 1)",
    ),
    row(
        "shared-layers-single-index",
        {f"{ARCH}.shared_layer_groups": [[0]]},
        f"{ARCH}.shared_layer_groups[0]",
        "must list at least two layer indices",
    ),
    row(
        "shared-layers-overlap",
        {f"{ARCH}.num_layers": 3, f"{ARCH}.shared_layer_groups": [[0, 1], [1, 2]]},
        f"{ARCH}.shared_layer_groups[1]",
        "layer 1 is in more than one group",
    ),
    row(
        "shared-layers-repeated-index",
        {f"{ARCH}.num_layers": 3, f"{ARCH}.shared_layer_groups": [[0, 0]]},
        f"{ARCH}.shared_layer_groups[0]",
        "lists layer 0 more than once",
    ),
    row(
        "shared-layers-boolean-index",
        {f"{ARCH}.num_layers": 3, f"{ARCH}.shared_layer_groups": [[True, 0]]},
        f"{ARCH}.shared_layer_groups[0]",
        "expected integer layer indices, got true",
    ),
    row(
        "max-context-shorter-than-context",
        {f"{ARCH}.max_context_length": 4},
        f"{ARCH}.max_context_length",
        "4 is shorter than global_training.context_length 8",
    ),
    # --- decoder ----------------------------------------------------------------------------------------------------
    row(
        "prediction-length-zero",
        {"model.interface.decoder.prediction_length": 0},
        "model.interfaces.default.decoder.prediction_length",
        "must be between 1 and context_length 8, got 0",
    ),
    row(
        "prediction-length-beyond-context",
        {"model.interface.decoder.prediction_length": 9},
        "model.interfaces.default.decoder.prediction_length",
        "got 9",
    ),
    row(
        "hidden-dims-without-mlp",
        {"model.interface.decoder.hidden_dims": [32]},
        "model.interfaces.default.decoder.hidden_dims",
        "only an mlp decoder has hidden layers",
    ),
    # --- ingestion trees ------------------------------------------------------------------------------------------
    row(
        "composite-without-branches",
        {INGESTION: {"type": "composite"}},
        f"{CANONICAL_INGESTION}.branches",
        "a composite needs at least one branch",
    ),
    row(
        "nested-composite-without-output-dim",
        {
            INGESTION: composite(
                value={"type": "composite", "branches": {"leaf": {"type": "embedding", "columns": ["amount"]}}}
            )
        },
        f"{CANONICAL_INGESTION}.branches.value.output_dim",
        "a nested composite needs output_dim",
    ),
    row(
        "branch-without-columns",
        {INGESTION: composite(value={"type": "embedding", "output_dim": 8})},
        f"{CANONICAL_INGESTION}.branches.value.columns",
        "a branch must name the columns it reads",
    ),
    row(
        "branch-column-not-an-input",
        {INGESTION: composite(value={"type": "embedding", "columns": ["amount", "delay"]})},
        f"{CANONICAL_INGESTION}.branches.value.columns",
        "'delay' is not an input column of the interface",
    ),
    row(
        "branches-share-columns",
        {INGESTION: composite(value={"type": "embedding", "columns": ["amount", "event"]})},
        f"{CANONICAL_INGESTION}.branches.value",
        "reads event already read by a sibling; set allow_shared_columns: true",
    ),
    row(
        "nested-branches-share-columns",
        {
            INGESTION: composite(
                value={
                    "type": "composite",
                    "output_dim": 8,
                    "branches": {
                        "a": {"type": "embedding", "columns": ["amount"]},
                        "b": {"type": "embedding", "columns": ["amount"]},
                    },
                }
            )
        },
        f"{CANONICAL_INGESTION}.branches.value.branches.b",
        "set allow_shared_columns: true on model.interfaces.default.ingestion.branches.value",
    ),
    row(
        "unused-input-column",
        {INGESTION: composite(value=None)},
        CANONICAL_INGESTION,
        "input columns amount are read by no branch",
    ),
    row(
        "auxiliary-column-not-an-input",
        {INGESTION: composite() | {"auxiliary_input_columns": ["delay"]}},
        f"{CANONICAL_INGESTION}.auxiliary_input_columns",
        "'delay' is not an input column",
    ),
    row(
        "allow-unused-below-root",
        {INGESTION: composite(value={"type": "embedding", "columns": ["amount"], "allow_unused_input_columns": True})},
        f"{CANONICAL_INGESTION}.branches.value.allow_unused_input_columns",
        "belongs at the root ingestion only",
    ),
    row(
        "auxiliary-below-root",
        {
            INGESTION: composite(
                value={"type": "embedding", "columns": ["amount"], "auxiliary_input_columns": ["amount"]}
            )
        },
        f"{CANONICAL_INGESTION}.branches.value.auxiliary_input_columns",
        "belongs at the root ingestion only",
    ),
    row(
        "branches-on-embedding",
        {f"{INGESTION}.branches": {"x": {"type": "embedding", "columns": ["event"]}}},
        f"{CANONICAL_INGESTION}.branches",
        "only a composite ingestion has branches",
    ),
    row(
        "feature-width-of-unread-column",
        {f"{INGESTION}.feature_embedding_dims.delay": 4},
        f"{CANONICAL_INGESTION}.feature_embedding_dims.delay",
        "is not a column this ingestion reads",
    ),
    row(
        "depth-without-layout",
        {INGESTION: composite(value={k: v for k, v in DEPTH_BRANCH.items() if k != "layout"})},
        f"{CANONICAL_INGESTION}.branches.value.layout",
        "a depth_transformer needs the name of its depth layout",
    ),
    row(
        "depth-without-architecture",
        {INGESTION: composite(value={k: v for k, v in DEPTH_BRANCH.items() if k != "architecture"})},
        f"{CANONICAL_INGESTION}.branches.value.architecture",
        "a depth_transformer needs its own architecture",
    ),
    row(
        "depth-architecture-heads",
        {
            INGESTION: composite(
                value=DEPTH_BRANCH | {"architecture": DEPTH_ARCHITECTURE | {"attention": {"type": "mha", "n_heads": 3}}}
            )
        },
        f"{CANONICAL_INGESTION}.branches.value.architecture.attention.n_heads",
        "3 does not divide dim_model 8",
    ),
    row(
        "depth-dropout-out-of-range",
        {INGESTION: composite(value=DEPTH_BRANCH | {"dropout": 1.5})},
        f"{CANONICAL_INGESTION}.branches.value.dropout",
        "must be in [0, 1), got 1.5",
    ),
    row(
        "layout-on-embedding",
        {f"{INGESTION}.layout": "items"},
        CANONICAL_INGESTION,
        "layout and architecture belong to a depth_transformer",
    ),
    # --- dataset freezing -----------------------------------------------------------------------------------------
    row(
        "freeze-and-freezing-except",
        {"dataset.freeze": {"backbone": {"freeze": ["attention.qkv"], "freezing_except": ["feed_forward"]}}},
        "dataset_training.default.freeze.backbone",
        "set either freeze or freezing_except, not both",
    ),
    row(
        "freeze-unknown-selector",
        {"dataset.freeze": {"backbone": {"freeze": ["attention.qkvv"]}}},
        "dataset_training.default.freeze.backbone.freeze",
        "'attention.qkvv' is not a parameter group; choose from attention.qkv",
    ),
    row(
        "freeze-unknown-branch",
        {INGESTION: composite(), "dataset.freeze": {"ingestion": {"branches": {"itme": {"freeze": []}}}}},
        "dataset_training.default.freeze.ingestion.branches.itme",
        "unknown branch (did you mean 'item'?); branches: item, value",
    ),
    row(
        "freeze-branches-of-embedding",
        {"dataset.freeze": {"ingestion": {"branches": {"item": {"freeze": []}}}}},
        "dataset_training.default.freeze.ingestion.branches",
        "only a composite ingestion has branches to select",
    ),
    row(
        "freeze-branches-of-backbone",
        {"dataset.freeze": {"backbone": {"branches": {"item": {"freeze": []}}}}},
        "dataset_training.default.freeze.backbone.branches",
        "only a composite ingestion has branches to select",
    ),
    row(
        "freeze-below-a-leaf",
        {
            INGESTION: composite(),
            "dataset.freeze": {"ingestion": {"branches": {"item": {"branches": {"x": {"freeze": []}}}}}},
        },
        "dataset_training.default.freeze.ingestion.branches.item.branches",
        "only a composite ingestion has branches to select",
    ),
    row(
        "freeze-branch-both-policies",
        {
            INGESTION: composite(),
            "dataset.freeze": {"ingestion": {"branches": {"item": {"freeze": [], "freezing_except": []}}}},
        },
        "dataset_training.default.freeze.ingestion.branches.item",
        "set either freeze or freezing_except, not both",
    ),
    # --- initialization -------------------------------------------------------------------------------------------
    row(
        "init-seed-negative",
        {"model.backbone.initialization_seed": -1},
        "model.backbone.initialization_seed",
        "must be an integer from 0 to 2**63-1, got -1",
    ),
    row(
        "init-seed-too-large",
        {"model.backbone.initialization_seed": 2**63},
        "model.backbone.initialization_seed",
        f"got {2**63}",
    ),
    row(
        "init-seed-boolean",
        {"model.backbone.initialization_seed": True},
        "model.backbone.initialization_seed",
        "expected an integer, got true",
    ),
    row(
        "init-seed-float",
        {"model.backbone.initialization_seed": 12.0},
        "model.backbone.initialization_seed",
        "expected an integer, got 12.0",
    ),
    row(
        "init-seed-of-branch",
        {INGESTION: composite(item=COMPOSITE["branches"]["item"] | {"initialization_seed": -5})},
        f"{CANONICAL_INGESTION}.branches.item.initialization_seed",
        "must be an integer from 0 to 2**63-1",
    ),
    row(
        "init-unknown-group",
        {"model.backbone.initialization": {"attention.kqv": QKV_NORMAL}},
        "model.backbone.initialization.attention.kqv",
        "'attention.kqv' is not a parameter group",
    ),
    row(
        "init-unknown-group-of-ingestion",
        {f"{INGESTION}.initialization": {"embeddings": QKV_NORMAL}},
        f"{CANONICAL_INGESTION}.initialization.embeddings",
        "did you mean 'embedding'?",
    ),
    row(
        "init-argument-of-another-method",
        {"model.backbone.initialization": {"attention.qkv": {"weight": {"method": "normal", "mean": 5, "a": 3}}}},
        "model.backbone.initialization.attention.qkv.weight.a",
        "is not an argument of normal, which takes mean, std (a belongs to kaiming_uniform, kaiming_normal, "
        "trunc_normal, uniform)",
    ),
    row(
        "init-argument-of-a-method-without-any",
        {"model.backbone.initialization": {"attention.qkv": {"bias": {"method": "zeros", "value": 3}}}},
        "model.backbone.initialization.attention.qkv.bias.value",
        "is not an argument of zeros, which takes none (value belongs to constant)",
    ),
    # --- optimizer and scheduler ----------------------------------------------------------------------------------
    row(
        "optimizer-unknown-name",
        {"global_training.optimizer": {"name": "Adamw"}},
        "global_training.optimizer.name",
        "'Adamw' is not allowed; choose one of AdamW",
    ),
    row(
        "optimizer-without-name",
        {"global_training.optimizer": {"weight_decay": 0.1}},
        "global_training.optimizer.name",
        "this block holds only weight_decay, and a block replaces the default whole: "
        "to keep the default add +global_training.optimizer.name=Adam",
    ),
    row(
        "optimizer-lr",
        {"global_training.optimizer": {"name": "AdamW", "lr": 0.1}},
        "global_training.optimizer.lr",
        "sequifier sets it from global_training.learning_rate",
    ),
    row(
        "optimizer-unknown-argument",
        {"global_training.optimizer": {"name": "AdamW", "weight_decai": 0.1}},
        "global_training.optimizer.weight_decai",
        "did you mean 'weight_decay'?",
    ),
    row(
        "optimizer-value-torch-refuses",
        {"global_training.optimizer": {"name": "AdamW", "eps": -1, "weight_decay": 0.1}},
        "global_training.optimizer.eps",
        "torch refuses AdamW(eps=-1, weight_decay=0.1): Invalid epsilon value",
    ),
    row(
        "optimizer-beta-out-of-range",
        {"global_training.optimizer": {"name": "Adam", "betas": [0.9, 1.5]}},
        "global_training.optimizer.betas",
        "Invalid beta parameter at index 1",
    ),
    row(
        "optimizer-betas-not-a-pair",
        {"global_training.optimizer": {"name": "Adam", "betas": 0.9}},
        "global_training.optimizer.betas",
        "Adam takes a list of 2 numbers, got 0.9",
    ),
    row(
        "optimizer-number-as-text",
        {"global_training.optimizer": {"name": "AdamW", "weight_decay": "abc"}},
        "global_training.optimizer.weight_decay",
        "AdamW takes a number, got 'abc'",
    ),
    row(
        "optimizer-boolean-as-text",
        {"global_training.optimizer": {"name": "AdamW", "amsgrad": "no"}},
        "global_training.optimizer.amsgrad",
        "AdamW takes true or false, got 'no'",
    ),
    row(
        "optimizer-optional-boolean-as-text",
        {"global_training.optimizer": {"name": "AdamW", "fused": "yes"}},
        "global_training.optimizer.fused",
        "true or false (or null), got 'yes'",
    ),
    row(
        "optimizer-arguments-that-exclude-each-other",
        {"global_training.optimizer": {"name": "AdamW", "fused": True, "foreach": True}},
        "global_training.optimizer",
        "cannot be `True` together",
    ),
    row(
        "optimizer-nesterov-without-momentum",
        {"global_training.optimizer": {"name": "SGD", "nesterov": True}},
        "global_training.optimizer.nesterov",
        "Nesterov momentum requires a momentum",
    ),
    row(
        "optimizer-capturable-on-cpu",
        {"global_training.optimizer": {"name": "AdamW", "capturable": True}},
        "global_training.optimizer.capturable",
        "must be on supported devices",
    ),
    row(
        "scheduler-integer-as-float",
        {"global_training.scheduler": {"name": "StepLR", "step_size": 1.5}},
        "global_training.scheduler.step_size",
        "StepLR takes an integer, got 1.5",
    ),
    row(
        "scheduler-value-torch-refuses",
        {"global_training.scheduler": {"name": "OneCycleLR", "max_lr": 0.1, "anneal_strategy": "lin"}},
        "global_training.scheduler.anneal_strategy",
        "anneal_strategy must be one of 'cos' or 'linear'",
    ),
    row(
        "scheduler-unknown-name",
        {"global_training.scheduler": {"name": "StepLr", "step_size": 1}},
        "global_training.scheduler.name",
        "did you mean 'StepLR'?",
    ),
    row(
        "scheduler-lr",
        {"global_training.scheduler": {"name": "StepLR", "step_size": 1, "lr": 0.1}},
        "global_training.scheduler.lr",
        "StepLR does not take this argument",
    ),
    row(
        "scheduler-unknown-argument",
        {"global_training.scheduler": {"name": "StepLR", "step": 1}},
        "global_training.scheduler.step",
        "did you mean 'step_size'?",
    ),
    row(
        "scheduler-total-steps-in-reset-mode",
        {"global_training.scheduler": {"name": "OneCycleLR", "max_lr": 0.01, "total_steps": 1}},
        "global_training.scheduler.total_steps",
        "do not set it for an epoch-stepped scheduler in reset mode",
    ),
    row(
        "scheduler-continuous-total-steps-mismatch",
        {
            "global_training.scheduler": {"name": "OneCycleLR", "max_lr": 0.01, "total_steps": 5},
            "global_training.reset_optimization_on_phase": False,
            "training_plan.phases": [
                {"name": "a", "epochs": 2, "sources": [{"source": "events"}]},
                {"name": "b", "epochs": 1, "sources": [{"source": "events"}]},
            ],
        },
        "global_training.scheduler.total_steps",
        "5 must equal the sum of all phase epochs (3)",
        base="canonical",
    ),
    row(
        "scheduler-epochs-times-steps-in-reset-mode",
        {"global_training.scheduler": {"name": "OneCycleLR", "max_lr": 0.01, "epochs": 10, "steps_per_epoch": 1}},
        "global_training.scheduler.epochs x steps_per_epoch",
        "do not set it for an epoch-stepped scheduler in reset mode",
    ),
    row(
        "scheduler-continuous-epochs-times-steps-mismatch",
        {
            "global_training.scheduler": {"name": "OneCycleLR", "max_lr": 0.01, "epochs": 10, "steps_per_epoch": 1},
            "global_training.reset_optimization_on_phase": False,
            "training_plan.phases": [
                {"name": "a", "epochs": 2, "sources": [{"source": "events"}]},
                {"name": "b", "epochs": 1, "sources": [{"source": "events"}]},
            ],
        },
        "global_training.scheduler.epochs x steps_per_epoch",
        "10 must equal the sum of all phase epochs (3)",
        base="canonical",
    ),
    row(
        "scheduler-one-cycle-epochs-alone",
        {
            "global_training.scheduler": {"name": "OneCycleLR", "max_lr": 0.01, "epochs": 4},
            "global_training.scheduler_step_on": "batch",
        },
        "global_training.scheduler.epochs",
        "OneCycleLR's length is epochs x steps_per_epoch, so give both",
    ),
    row(
        "scheduler-one-cycle-two-lengths",
        {
            "global_training.scheduler": {
                "name": "OneCycleLR",
                "max_lr": 0.01,
                "total_steps": 40,
                "epochs": 4,
                "steps_per_epoch": 10,
            },
            "global_training.scheduler_step_on": "batch",
        },
        "global_training.scheduler.epochs",
        "OneCycleLR takes total_steps before epochs x steps_per_epoch, so this would be ignored",
    ),
    row(
        "scheduler-one-cycle-steps-per-epoch-zero",
        {
            "global_training.scheduler": {"name": "OneCycleLR", "max_lr": 0.01, "epochs": 4, "steps_per_epoch": 0},
            "global_training.scheduler_step_on": "batch",
        },
        "global_training.scheduler.steps_per_epoch",
        "must be a positive integer, got 0",
    ),
    # --- training plan --------------------------------------------------------------------------------------------
    row(
        "phase-name-twice",
        {"training_plan.phases": [{"name": "train", "epochs": 1, "sources": [{"source": "events"}]}] * 2},
        "training_plan.phases[1].name",
        "phase name 'train' is used more than once",
        base="canonical",
    ),
    row(
        "phase-name-blank",
        {"training_plan.phases": [{"name": " ", "epochs": 1, "sources": [{"source": "events"}]}]},
        "training_plan.phases[0].name",
        "' ' cannot name a phase in logs and the metric files' phase column",
        base="canonical",
    ),
    row(
        "phase-epochs-zero", {"training_plan.epochs": 0}, "training_plan.phases[0].epochs", "must be at least 1, got 0"
    ),
    row(
        "phase-without-phases",
        {"training_plan.phases": []},
        "training_plan.phases",
        "at least one phase is required",
        base="canonical",
    ),
    row(
        "phase-without-sources",
        {"training_plan.phases.0.sources": []},
        "training_plan.phases[0].sources",
        "at least one source is required",
        base="canonical",
    ),
    row(
        "phase-batches-per-selection-zero",
        {"training_plan.phases.0.sources.0.batches_per_selection": 0},
        "training_plan.phases[0].sources[0].batches_per_selection",
        "must be at least 1, got 0",
        base="canonical",
    ),
    row(
        "phase-source-weight-zero",
        {"training_plan.phases.0.sources.0.weight": 0},
        "training_plan.phases[0].sources[0].weight",
        "must be positive, got 0.0",
        base="canonical",
    ),
    # --- evaluation, monitoring, early stopping -------------------------------------------------------------------
    row(
        "monitor-required-with-several-sources",
        {
            "dataset_training.telemetry": SECOND_DATASET,
            "evaluation.sources": [{"source": "events"}, {"source": "telemetry.main"}],
        },
        "evaluation.monitor",
        "required with several evaluation sources",
        base="canonical",
    ),
    row(
        "early-stopping-without-evaluation",
        {"evaluation": False, "global_training.early_stopping_patience": 3},
        "global_training.early_stopping_patience",
        "needs evaluation to monitor a validation metric",
    ),
    row(
        "resume-required-without-a-checkpoint",
        {"global_training.resume": {"policy": "required"}},
        "global_training.resume.checkpoint_path",
        "is required with policy required",
    ),
    row(
        "resume-unknown-policy",
        {"global_training.resume": {"policy": "always"}},
        "global_training.resume.policy",
        "choose one of 'never', 'if_exists', 'required'",
    ),
    row(
        "evaluation-without-sources",
        {"evaluation.sources": []},
        "evaluation.sources",
        "at least one source is required (or set evaluation: false)",
        base="canonical",
    ),
    # --- global training ------------------------------------------------------------------------------------------
    row(
        "batch-size-zero", {"global_training.batch_size": 0}, "global_training.batch_size", "must be at least 1, got 0"
    ),
    row(
        "context-length-zero",
        {"global_training.context_length": 0},
        "global_training.context_length",
        "must be at least 1, got 0",
    ),
    row(
        "learning-rate-zero",
        {"global_training.learning_rate": 0},
        "global_training.learning_rate",
        "must be positive and at most 3.403e+38 (the largest float32), got 0.0",
    ),
    row(
        "learning-rate-beyond-float32",
        {"global_training.learning_rate": 1e300},
        "global_training.learning_rate",
        "must be positive and at most 3.403e+38 (the largest float32), got 1e+300",
    ),
    row(
        "num-threads-beyond-any-machine",
        {"global_training.num_threads": 10**12},
        "global_training.num_threads",
        "must be at most 4096 threads per process, got 1000000000000",
    ),
    row(
        "initializer-std-negative",
        {"model.backbone.initialization": {"attention.qkv": {"weight": {"method": "normal", "std": -1}}}},
        "model.backbone.initialization.attention.qkv.weight.std",
        "must be a finite number >= 0, got -1.0",
    ),
    row(
        "uniform-initializer-bounds-reversed",
        {"model.interface.decoder.initialization": {"decoder": {"weight": {"method": "uniform", "a": 1}}}},
        "model.interfaces.default.decoder.initialization.decoder.weight.a",
        "the lower bound a (1.0) must be below the upper bound b (0.1)",
    ),
    row(
        "mlp-decoder-hidden-width-zero",
        {"model.interface.decoder.type": "mlp", "model.interface.decoder.hidden_dims": [8, 0]},
        "model.interfaces.default.decoder.hidden_dims[1]",
        "must be positive, got 0",
    ),
    row(
        "gradient-clip-negative",
        {"global_training.gradient_clip": -1.0},
        "global_training.gradient_clip",
        "must be positive, got -1.0",
    ),
    row(
        "max-tokens-per-pass-zero",
        {"global_training.max_tokens_per_pass": 0},
        "global_training.max_tokens_per_pass",
        "must be positive, got 0",
    ),
    row(
        "num-workers-negative",
        {"global_training.num_workers": -1},
        "global_training.num_workers",
        "must be >= 0, got -1",
    ),
    row(
        "torch-compile-outer-with-fsdp",
        {
            "global_training.distributed": True,
            "global_training.data_parallelism": "fsdp",
            "global_training.torch_compile": "outer",
        },
        "global_training.torch_compile",
        "use inner or none with FSDP",
    ),
    row(
        "torch-compile-inner-with-ddp",
        {
            "global_training.distributed": True,
            "global_training.data_parallelism": "ddp",
            "global_training.torch_compile": "inner",
        },
        "global_training.torch_compile",
        "use outer or none with DDP",
    ),
    row(
        "max-tokens-per-pass-distributed",
        {"global_training.distributed": True, "global_training.max_tokens_per_pass": 4096},
        "global_training.max_tokens_per_pass",
        "must be null with distributed: true",
    ),
    row(
        "world-size-without-distributed",
        {"global_training.world_size": 4},
        "global_training.world_size",
        "4 processes need distributed: true",
    ),
    row("device-gpu", {"device": "gpu"}, "device", "'gpu' is not a device; use cpu, cuda, cuda:N or mps"),
    row("model-name-empty", {"model_name": ""}, "model_name", "'' cannot name the model's files"),
    row("model-name-outside-the-project", {"model_name": "../../escaped"}, "model_name", "start with no '.'"),
    row("model-name-with-a-folder", {"model_name": "a/b"}, "model_name", "hold no '/'"),
    row("model-name-with-a-backslash", {"model_name": "a\\b"}, "model_name", "'a\\b' cannot name the model's files"),
    row("model-name-with-a-line-break", {"model_name": "a\nb"}, "model_name", "no control character"),
    row("model-name-not-utf8", {"model_name": "a\udcffb"}, "model_name", "byte that is not UTF-8 text"),
    row("model-name-too-long", {"model_name": "m" * 201}, "model_name", "is 201 bytes long; at most 200 are allowed"),
    row("model-name-multibyte-too-long", {"model_name": "é" * 101}, "model_name", "is 202 bytes long"),
    row(
        "model-and-dataset-name-too-long",
        {"model_name": "m" * 191, "dataset_training.telemetry": SECOND_DATASET},
        "dataset_training.telemetry",
        "201 bytes; model_name and the dataset's name together",
        base="canonical",
    ),
    row(
        "an-integer-as-text",
        {"global_training.inference_batch_size": "33"},
        "global_training.inference_batch_size",
        "got '33' (text: write it without quotes; a value an interpolation such as ${oc.env:...} gives is text too",
    ),
    pytest.param(
        "singleton",
        {"device": "mps"},
        "device",
        "'mps' was requested but this machine and torch build have no MPS",
        id="device-mps-without-mps",
        marks=pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has MPS"),
    ),
    pytest.param(
        "singleton",
        {"device": "cuda"},
        "device",
        "CUDA is not available on this machine; use device: cpu",
        id="device-cuda-without-cuda",
        marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA"),
    ),
    pytest.param(
        "singleton",
        {"device": "cuda:1"},
        "device",
        "'cuda:1' was requested but CUDA is not available",
        id="device-cuda-index-without-cuda",
        marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA"),
    ),
]


@pytest.mark.parametrize("base, changes, path, fragment", VALIDATION_ROWS)
def test_invalid_config_is_rejected_with_its_canonical_path(base: str, changes: dict, path: str, fragment: str):
    config = apply(BASES[base](), changes)
    with pytest.raises(UserError) as error:
        check_supported(canonical_config(config))  # what the train command checks before any job starts
    assert_reported(error.value, path, fragment)


@pytest.mark.parametrize("changes", [{"model.interface": DROP}, {"model": DROP, "models": {"backbone": {}}}])
def test_a_missing_model_section_is_not_also_blamed_on_the_datasets_interface(changes):
    with pytest.raises(UserError) as error:
        canonical_config(apply(BASES["singleton"](), changes))
    assert "model_interface" not in str(error.value)


def test_no_interfaces_at_all_is_one_problem_not_also_each_datasets_unknown_interface():
    config = apply(BASES["singleton"](), {"model.interface": DROP, "model.interfaces": {}})
    with pytest.raises(UserError) as error:
        check_supported(canonical_config(config))
    assert str(error.value).splitlines() == ["model.interfaces: at least one interface is required"]


def test_a_context_length_below_one_is_one_problem_not_also_the_bounds_that_depend_on_it():
    config = apply(BASES["singleton"](), {"global_training.context_length": 0})
    with pytest.raises(UserError) as error:
        check_supported(canonical_config(config))
    assert str(error.value).splitlines() == ["global_training.context_length: must be at least 1, got 0"]


@pytest.mark.parametrize("base", sorted(BASES))
def test_the_unmutated_bases_are_valid(base: str, reference_project: Path):
    """Every row above differs from a valid config only by its own changes."""
    config = canonical_config(BASES[base]())
    resolve(config, reference_project, cwd=reference_project)


def test_the_table_covers_at_least_sixty_rules():
    ids = [p.id for p in VALIDATION_ROWS]
    assert len(ids) == len(set(ids)) and len(ids) >= 60


# --- rules that need the preprocessing metadata ------------------------------------------------------------------


def metadata_variant(project: Path, name: str, **fields: Any) -> str:
    """Write a copy of the reference metadata with `fields` replaced; returns its project-relative path."""
    data = json.loads((project / METADATA).read_text())
    data.update(fields)
    relative = f"configs/metadata_configs/{name}.json"
    (project / relative).write_text(json.dumps(data))
    return relative


def train_only(project: Path) -> dict:
    path = metadata_variant(project, "train-only", split_paths=["./data/events-split0.parquet"])
    return {"dataset.part.metadata_config_path": path}


def two_parts(**second_fields: Any) -> Callable[[Path], dict]:
    def changes(project: Path) -> dict:
        second = metadata_variant(project, "second", **second_fields)
        return {
            "dataset.part": DROP,
            "dataset.parts": {
                "original": {"metadata_config_path": METADATA},
                "increment": {"metadata_config_path": second},
            },
        }

    return changes


def folder_part(project: Path) -> dict:
    folder = project / "data" / "events-folder-split0"
    folder.mkdir()
    shutil.copy(project / "data" / "events-split0.parquet", folder / "events-folder-split0-0.parquet")
    return two_parts(split_paths=["./data/events-folder-split0", "./data/events-split1.parquet"])(project)


def shared_interface_differing_classes(project: Path) -> dict:
    data = json.loads((project / METADATA).read_text())
    other = metadata_variant(project, "other", n_classes=data["n_classes"] | {"event": 40})
    return {
        "dataset_training.telemetry": SECOND_DATASET | {"parts": {"main": {"metadata_config_path": other}}},
        "training_plan.phases.0.sources": [{"source": "events"}, {"source": "telemetry"}],
    }


def digits_named_column(project: Path) -> dict:
    """The reference data with a copy of `event` named "0", as a file another tool preprocessed could hold."""
    data = json.loads((project / METADATA).read_text())
    path = metadata_variant(
        project,
        "digits",
        column_data_types=data["column_data_types"] | {"0": "Int64"},
        n_classes=data["n_classes"] | {"0": data["n_classes"]["event"]},
        id_maps=data["id_maps"] | {"0": data["id_maps"]["event"]},
    )
    return {
        "dataset.part.metadata_config_path": path,
        "model.interface.input_columns": ["event", "channel", "amount", "0"],
        f"{INGESTION}.feature_embedding_dims.0": 4,
    }


def fixed(changes: dict) -> Callable[[Path], dict]:
    return lambda project: changes


def resolve_row(id: str, changes: Callable[[Path], dict], path: str, fragment: str, base: str = "singleton"):
    return pytest.param(base, changes, path, fragment, id=id)


RESOLVE_ROWS = [
    resolve_row(
        "digits-named-column",
        digits_named_column,
        "model.interfaces.default.input_columns",
        "the column name '0' is only digits",
    ),
    resolve_row(
        "unknown-input-column",
        fixed(
            {
                "model.interface.input_columns": ["event", "channel", "amount", "weather"],
                f"{INGESTION}.feature_embedding_dims.weather": 4,
            }
        ),
        "model.interfaces.default.input_columns",
        "column 'weather' is not in the preprocessed data",
    ),
    resolve_row(
        "unknown-target-column",
        fixed(
            {
                "model.interface.target_columns": ["event", "price"],
                "dataset.criterion": {"event": "CrossEntropyLoss", "price": "MSELoss"},
            }
        ),
        "model.interfaces.default.target_columns",
        "column 'price' is not in the preprocessed data",
    ),
    resolve_row(
        "real-criterion-on-categorical",
        fixed({"dataset.criterion.event": "MSELoss"}),
        "dataset_training.default.criterion.event",
        "MSELoss needs a real column, but 'event' is categorical",
    ),
    resolve_row(
        "categorical-criterion-on-real",
        fixed({"dataset.criterion.amount": "CrossEntropyLoss"}),
        "dataset_training.default.criterion.amount",
        "CrossEntropyLoss needs a categorical column, but 'amount' is real",
    ),
    resolve_row(
        "class-shares-of-real-target",
        fixed({"dataset.class_share_log_columns": ["amount"]}),
        "dataset_training.default.class_share_log_columns",
        "'amount' is real; class shares need a categorical target",
    ),
    resolve_row(
        "window-too-long",
        fixed({"global_training.context_length": 17}),
        "global_training.context_length",
        "context_length 17 + target_offset 1 exceeds the stored window length 17",
    ),
    resolve_row(
        "window-too-long-names-the-longest-context",
        fixed({"global_training.context_length": 17}),
        "global_training.context_length",
        "; with target_offset 1, context_length can be at most 16",
    ),
    resolve_row(
        "target-offset-beyond-window",
        fixed({"global_training.target_offset": 10, "global_training.context_length": 8}),
        "global_training.target_offset",
        "target_offset 10 exceeds the stored window length 17 of",
    ),
    resolve_row(
        "target-offset-beyond-window-names-its-largest",
        fixed({"global_training.target_offset": 10, "global_training.context_length": 8}),
        "global_training.target_offset",
        "; with context_length 8, target_offset can be at most 1",
    ),
    resolve_row(
        "target-offset-beyond-the-preprocessed-largest",
        fixed({"global_training.target_offset": 2, "global_training.context_length": 8}),
        "global_training.target_offset",
        "2 exceeds max_target_offset 1 of",
    ),
    resolve_row(
        "metadata-missing",
        fixed({"dataset.part.metadata_config_path": "configs/metadata_configs/missing.json"}),
        "dataset_training.default.parts.default.metadata_config_path",
        "does not exist (run `sequifier preprocess` first?)",
    ),
    resolve_row(
        "metadata-under-a-misspelt-project-root",
        fixed({"project_root": "projcet"}),
        "dataset_training.default.parts.default.metadata_config_path",
        "projcet/configs/metadata_configs/events.json does not exist; there is no folder ",
    ),
    resolve_row(
        "metadata-path-a-folder",
        fixed({"dataset.part.metadata_config_path": "configs"}),
        "dataset_training.default.parts.default.metadata_config_path",
        "configs is a folder, not a file",
    ),
    resolve_row(
        "evaluated-part-without-validation-split",
        train_only,
        "dataset_training.default.parts.default.metadata_config_path",
        "part default.default is evaluated but",
    ),
    resolve_row(
        "parts-differ-in-classes",
        two_parts(n_classes={"event": 40, "channel": 6}),
        "dataset_training.default.parts",
        "parts 'original' and 'increment' differ in n_classes",
    ),
    resolve_row(
        "parts-differ-in-window",
        two_parts(window_length=33, window_lengths=[33, 33, 33]),
        "dataset_training.default.parts",
        "differ in window_length",
    ),
    resolve_row(
        "parts-differ-in-normalization",
        two_parts(normalize_real_columns=False),
        "dataset_training.default.parts",
        "differ in normalize_real_columns",
    ),
    resolve_row(
        "parts-differ-in-storage-form",
        folder_part,
        "dataset_training.default.parts",
        "use different storage forms (file vs folder)",
    ),
    resolve_row(
        "parquet-read-format-for-pt-shards",
        fixed({"dataset.part.metadata_config_path": "configs/metadata_configs/events_pt.json"}),
        "global_training.read_format",
        "parquet (or 3.x's csv) reads merged splits, but",
    ),
    resolve_row(
        "csv-read-format-of-3x-for-pt-shards",
        fixed(
            {
                "dataset.part.metadata_config_path": "configs/metadata_configs/events_pt.json",
                "global_training.read_format": "csv",
            }
        ),
        "global_training.read_format",
        "parquet (or 3.x's csv) reads merged splits, but",
    ),
    resolve_row(
        "interface-shared-by-differing-datasets",
        shared_interface_differing_classes,
        "dataset_training.telemetry.model_interface",
        "interface 'main' is shared with a dataset whose columns differ",
        base="canonical",
    ),
    resolve_row(
        "datasets-in-different-storage-forms",
        fixed(
            {
                "dataset_training.telemetry": SECOND_DATASET
                | {"parts": {"main": {"metadata_config_path": "configs/metadata_configs/events_pt.json"}}},
                "training_plan.phases.0.sources": [{"source": "events"}, {"source": "telemetry"}],
            }
        ),
        "global_training.read_format",
        "one read_format reads every part, but dataset_training.telemetry.parts.main is stored as pt shards",
        base="canonical",
    ),
]


@pytest.mark.parametrize("base, changes, path, fragment", RESOLVE_ROWS)
def test_config_contradicting_the_metadata_is_rejected(
    base: str, changes: Callable[[Path], dict], path: str, fragment: str, reference_project: Path
):
    config = canonical_config(apply(BASES[base](), changes(reference_project)))  # valid on its own
    with pytest.raises(UserError) as error:
        resolve(config, reference_project, cwd=reference_project)
    assert_reported(error.value, path, fragment)


def test_parts_whose_maps_differ_only_in_reserved_entries_train_together(reference_project: Path):
    """Maps of integer columns are written without `[unknown]` and `[other]` (as 3.x writes them), earlier ones with
    them: the same ids, so parts preprocessed before and after belong to one dataset; other ids still do not."""
    data = json.loads((reference_project / METADATA).read_text())
    without_reserved = {c: {k: v for k, v in m.items() if not k.startswith("[")} for c, m in data["id_maps"].items()}
    config = canonical_config(apply(BASES["singleton"](), two_parts(id_maps=without_reserved)(reference_project)))
    assert len(resolve(config, reference_project, cwd=reference_project).parts) == 2
    without_reserved["event"].popitem()
    config = canonical_config(apply(BASES["singleton"](), two_parts(id_maps=without_reserved)(reference_project)))
    with pytest.raises(UserError, match="parts 'original' and 'increment' differ in id_maps"):
        resolve(config, reference_project, cwd=reference_project)


def test_a_part_without_validation_split_is_fine_when_not_evaluated(reference_project: Path):
    config = canonical_config(apply(tiny_train_config(evaluation=False), train_only(reference_project)))
    spec = resolve(config, reference_project, cwd=reference_project)
    assert spec.validation_path is None


# --- the same rules through the real command line -----------------------------------------------------------------

CLI_ROWS = [
    pytest.param(
        {"global_training.batch_sise": 8},
        "global_training.batch_sise",
        "did you mean 'batch_size'?",
        id="cli-unknown-field",
    ),
    pytest.param(
        {"training_spec": {"batch_size": 16}},
        "training_spec",
        "the flat training schema is not accepted",
        id="cli-historical-key",
    ),
    pytest.param(
        {"dataset_training": {"other": SECOND_DATASET}},
        "dataset",
        "cannot be combined with dataset_training",
        id="cli-singular-and-plural",
    ),
    pytest.param({"device": "gpu"}, "device", "'gpu' is not a device", id="cli-device-gpu"),
    pytest.param(
        {"global_training.optimizer": {"name": "AdamW", "lr": 0.1}},
        "global_training.optimizer.lr",
        "sequifier sets it from global_training.learning_rate",
        id="cli-optimizer-lr",
    ),
    pytest.param(
        {"global_training.optimizer": {"name": "AdamW", "betas": [0.9, 1.5]}},
        "global_training.optimizer.betas",
        "torch refuses AdamW(betas=[0.9, 1.5])",
        id="cli-optimizer-value",
    ),
    pytest.param(
        {"dataset.loss_weights": {"event": 0.0, "amount": 0.0}},
        "dataset_training.default.loss_weights",
        "at least one target needs a positive weight",
        id="cli-loss-weights-zero",
    ),
    pytest.param(
        {f"{ARCH}.attention.n_heads": 3}, f"{ARCH}.attention.n_heads", "does not divide dim_model 16", id="cli-heads"
    ),
    pytest.param(
        {"dataset.criterion.event": "MSELoss"},
        "dataset_training.default.criterion.event",
        "needs a real column",
        id="cli-criterion-kind",
    ),
    pytest.param(
        {"global_training.context_length": 17},
        "global_training.context_length",
        "exceeds the stored window length 17",
        id="cli-window-too-long",
    ),
    pytest.param(
        {
            "model.interface.input_columns": ["event", "channel", "amount", "weather"],
            f"{INGESTION}.feature_embedding_dims.weather": 4,
        },
        "model.interfaces.default.input_columns",
        "column 'weather' is not in the preprocessed data",
        id="cli-unknown-column",
    ),
    pytest.param(
        {f"{ARCH}.num_layers": 10**12},
        "model.backbone.architecture",
        "num_layers 1000000000000, feed_forward.dim 32, max_context_length 8), more than this machine's",
        id="cli-layers-beyond-memory",
    ),
    pytest.param(
        {f"{ARCH}.dim_model": 10**12, f"{ARCH}.attention.n_heads": 1, f"{ARCH}.attention.n_kv_heads": 1},
        "model.backbone.architecture",
        "training this network needs about 8,589,934,592.0 GiB",
        id="cli-width-beyond-addressable",
    ),
]


@pytest.mark.parametrize("changes, path, fragment", CLI_ROWS)
def test_invalid_config_through_the_cli_exits_2_naming_the_path(
    changes: dict, path: str, fragment: str, reference_project: Path
):
    write_yaml(reference_project / "configs" / "train.yaml", apply(tiny_train_config(), changes))
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert any(path in line and fragment in line for line in result.stderr.splitlines()), result.stderr
