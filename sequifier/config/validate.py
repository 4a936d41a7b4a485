"""Turns expanded config data into a frozen TrainConfig and checks the rules between fields."""

from __future__ import annotations

from typing import Any

from sequifier.config.errors import did_you_mean
from sequifier.config.schema import TrainConfig
from sequifier.config.typed import ProblemList, build

CRITERIA = {"CrossEntropyLoss": "categorical", "MSELoss": "real", "L1Loss": "real", "HuberLoss": "real"}
HISTORICAL_KEYS = {
    "training_spec": "global_training (optimization) and dataset_training (criterion, loss_weights)",
    "model_spec": "model.backbone.architecture and model.interfaces.<name>",
    "data_path": "the metadata's split_paths, referenced by dataset_training.<name>.parts.<part>.metadata_config_path",
    "metadata_config_path": "dataset_training.<name>.parts.<part>.metadata_config_path",
    "input_columns": "model.interfaces.<name>.input_columns",
    "target_columns": "model.interfaces.<name>.target_columns",
    "target_column_types": "the preprocessing metadata (column_data_types)",
    "selected_columns": "model.interfaces.<name>.input_columns",
}


def validate(data: dict[str, Any]) -> TrainConfig:
    """Build the canonical config or raise every problem found, each with its canonical path."""
    problems = ProblemList()
    _reject_historical(data, problems)
    problems.raise_if_any()
    config = build(TrainConfig, data, "", problems)
    problems.raise_if_any()
    _check_rules(config, problems)
    problems.raise_if_any()
    return config


def _reject_historical(data: dict[str, Any], problems: ProblemList) -> None:
    for key, place in HISTORICAL_KEYS.items():
        if key in data:
            problems.add(key, f"the flat training schema is not accepted; this belongs in {place}")
    model = data.get("model")
    if isinstance(model, dict):
        for key in ("ingestion", "decoder"):
            if key in model:
                problems.add(f"model.{key}", f"belongs to an interface: model.interfaces.<name>.{key} (or model.interface.{key})")
        architecture = ((model.get("backbone") or {}).get("architecture") or {})
        if isinstance(architecture, dict) and "freeze" in architecture:
            problems.add("model.backbone.architecture.freeze", "freezing is owned by datasets: dataset_training.<name>.freeze")


def _check_rules(config: TrainConfig, problems: ProblemList) -> None:
    architecture = config.model.backbone.architecture
    attention = architecture.attention
    if architecture.dim_model % attention.n_heads:
        problems.add("model.backbone.architecture.attention.n_heads", f"{attention.n_heads} does not divide dim_model {architecture.dim_model}")
    kv_heads = attention.n_kv_heads or attention.n_heads
    if attention.n_heads % kv_heads:
        problems.add("model.backbone.architecture.attention.n_kv_heads", f"{kv_heads} does not divide n_heads {attention.n_heads}")
    training = config.global_training
    for name in ("context_length", "batch_size", "inference_batch_size", "accumulation_steps", "window_stride", "target_offset"):
        if getattr(training, name) < 1:
            problems.add(f"global_training.{name}", f"must be at least 1, got {getattr(training, name)}")
    if training.learning_rate <= 0:
        problems.add("global_training.learning_rate", f"must be positive, got {training.learning_rate}")
    max_context = architecture.max_context_length
    if max_context is not None and max_context < training.context_length:
        problems.add("model.backbone.architecture.max_context_length", f"{max_context} is shorter than global_training.context_length {training.context_length}")
    if not 0.0 <= architecture.dropout < 1.0:
        problems.add("model.backbone.architecture.dropout", f"must be in [0, 1), got {architecture.dropout}")
    _check_interfaces(config, problems)
    _check_datasets(config, problems)
    _check_plan(config, problems)


def _check_interfaces(config: TrainConfig, problems: ProblemList) -> None:
    for name, interface in config.model.interfaces.items():
        path = f"model.interfaces.{name}"
        if not interface.input_columns:
            problems.add(f"{path}.input_columns", "must name at least one column")
        if not interface.target_columns:
            problems.add(f"{path}.target_columns", "must name at least one column")
        if interface.decoder.prediction_length < 1:
            problems.add(f"{path}.decoder.prediction_length", "must be at least 1")
        if interface.decoder.support != 1:
            problems.add(f"{path}.decoder.support", "values other than 1 are not supported yet")


def _check_datasets(config: TrainConfig, problems: ProblemList) -> None:
    if len(config.dataset_training) != 1:
        problems.add("dataset_training", f"exactly one dataset is supported yet, got {len(config.dataset_training)}")
    for name, dataset in config.dataset_training.items():
        path = f"dataset_training.{name}"
        interface = config.model.interfaces.get(dataset.model_interface)
        if interface is None:
            problems.add(f"{path}.model_interface", f"unknown interface {dataset.model_interface!r}" + did_you_mean(dataset.model_interface, config.model.interfaces))
            continue
        if len(dataset.parts) != 1:
            problems.add(f"{path}.parts", f"exactly one part is supported yet, got {len(dataset.parts)}")
        for target in interface.target_columns:
            if target not in dataset.criterion:
                problems.add(f"{path}.criterion", f"missing a criterion for target {target!r}")
        for target, criterion in dataset.criterion.items():
            if target not in interface.target_columns:
                problems.add(f"{path}.criterion.{target}", "is not a target of interface " + repr(dataset.model_interface))
            elif criterion not in CRITERIA:
                allowed = ", ".join(CRITERIA)
                problems.add(f"{path}.criterion.{target}", f"{criterion!r} is not allowed; choose one of {allowed}" + did_you_mean(criterion, CRITERIA))
        weights = dataset.loss_weights or {}
        for target, weight in weights.items():
            if target not in interface.target_columns:
                problems.add(f"{path}.loss_weights.{target}", "is not a target of interface " + repr(dataset.model_interface))
            elif weight < 0:
                problems.add(f"{path}.loss_weights.{target}", f"must be >= 0, got {weight}")
        if weights and not any(weights.get(t, 1.0) > 0 for t in interface.target_columns):
            problems.add(f"{path}.loss_weights", "at least one target needs a positive weight")


def _check_plan(config: TrainConfig, problems: ProblemList) -> None:
    phases = config.training_plan.phases
    if len(phases) != 1:
        problems.add("training_plan.phases", f"exactly one phase is supported yet, got {len(phases)}")
    for i, phase in enumerate(phases):
        path = f"training_plan.phases[{i}]"
        if phase.epochs < 1:
            problems.add(f"{path}.epochs", f"must be at least 1, got {phase.epochs}")
        for j, source in enumerate(phase.sources):
            _check_source(config, source.source, f"{path}.sources[{j}].source", problems)
    if config.evaluation is not None:
        for j, source in enumerate(config.evaluation.sources):
            _check_source(config, source.source, f"evaluation.sources[{j}].source", problems)


def _check_source(config: TrainConfig, source: str, where: str, problems: ProblemList) -> None:
    dataset_name, _, part = source.partition(".")
    dataset = config.dataset_training.get(dataset_name)
    if dataset is None:
        problems.add(where, f"unknown dataset {dataset_name!r}" + did_you_mean(dataset_name, config.dataset_training))
    elif part and part not in dataset.parts:
        problems.add(where, f"unknown part {part!r} of dataset {dataset_name!r}" + did_you_mean(part, dataset.parts))
