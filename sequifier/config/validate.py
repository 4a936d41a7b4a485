"""Turns expanded config data into a frozen TrainConfig and checks the rules between fields."""

from __future__ import annotations

import re
from typing import Any

from sequifier.config.errors import did_you_mean
from sequifier.config.schema import TrainConfig, dataset_model_name
from sequifier.config.typed import ProblemList, build
from sequifier.config.validate_model import check_model, check_selectors
from sequifier.config.validate_training import check_global_training, check_plan_and_evaluation

CRITERIA = {"CrossEntropyLoss": "categorical", "MSELoss": "real", "L1Loss": "real", "HuberLoss": "real"}
SPLIT_PATHS_PLACE = (
    "the metadata's split_paths, referenced by dataset_training.<name>.parts.<part>.metadata_config_path"
)
HISTORICAL_KEYS = {
    "training_spec": "global_training (optimization) and dataset_training.<name> (criterion, loss_weights)",
    "model_spec": "model.backbone.architecture and model.interfaces.<name>",
    "data_path": SPLIT_PATHS_PLACE,
    "training_data_path": SPLIT_PATHS_PLACE,
    "validation_data_path": SPLIT_PATHS_PLACE,
    "metadata_config_path": "dataset_training.<name>.parts.<part>.metadata_config_path",
    "input_columns": "model.interfaces.<name>.input_columns",
    "target_columns": "model.interfaces.<name>.target_columns",
    "target_column_types": "the preprocessing metadata (column_data_types)",
    "selected_columns": "model.interfaces.<name>.input_columns",
    "categorical_columns": "the preprocessing metadata (column_data_types)",
    "real_columns": "the preprocessing metadata (column_data_types)",
    "column_types": "the preprocessing metadata (column_data_types)",
    "id_maps": "the preprocessing metadata",
}
LONGEST_FILE_STEM = 200  # bytes of <model> or <model>-<dataset>: 255 less "-embedding-best-<epoch>.onnx" with room
DEVICE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


def validate(data: dict[str, Any]) -> TrainConfig:
    """Build the canonical config or raise every problem found, each with its canonical path."""
    problems = ProblemList()
    config = build(TrainConfig, data, "", problems)
    problems.raise_if_any()
    check_device(config.device, problems)
    check_file_stems(config, problems)
    check_model(config.model, config.global_training.context_length, problems)
    check_global_training(config, problems)
    _check_datasets(config, problems)
    check_plan_and_evaluation(config, problems)
    problems.raise_if_any()
    return config


def reject_historical(data: dict[str, Any]) -> None:
    """The flat schema of earlier releases, named with the canonical place of each field (before expansion)."""
    problems = ProblemList()
    for key, place in HISTORICAL_KEYS.items():
        if key in data:
            problems.add(key, f"the flat training schema is not accepted; this belongs in {place}")
    model = data.get("model")
    if isinstance(model, dict):
        for key in ("ingestion", "decoder"):
            if key in model:
                problems.add(
                    f"model.{key}", f"belongs to an interface: model.interfaces.<name>.{key} (or model.interface.{key})"
                )
        architecture = (model.get("backbone") or {}).get("architecture") or {}
        for key in ("freeze", "freezing", "freezing_except"):
            if isinstance(architecture, dict) and key in architecture:
                problems.add(
                    f"model.backbone.architecture.{key}",
                    "freezing is owned by datasets: dataset_training.<name>.freeze.backbone",
                )
    problems.raise_if_any()


def model_name_problem(name: str) -> str | None:
    """Why `name` cannot be a model name (which becomes file and folder names under models/, logs/ and
    checkpoints/), or None."""
    unprintable = any(not c.isprintable() for c in name)
    if not name or name != name.strip() or name.startswith(".") or any(c in name for c in "/\\") or unprintable:
        shown = repr(name) if unprintable else f"'{name}'"  # repr escapes what would not print, and doubles '\\'
        return (
            f"{shown} cannot name the model's files: it must be non-empty, start with no '.', hold no '/' or "
            "'\\', no control character or byte that is not UTF-8 text, and no spaces at either end"
        )
    if len(name.encode()) > LONGEST_FILE_STEM:
        return (
            f"is {len(name.encode())} bytes long; at most {LONGEST_FILE_STEM} are allowed, so that its files "
            "(<model>-embedding-best-<epoch>.onnx, ...) stay within the 255 bytes a file name may have"
        )
    return None


def check_file_stems(config: TrainConfig, problems: ProblemList) -> None:
    """The model name, and in a run of several datasets each <model>-<dataset>, can name the run's files."""
    problem = model_name_problem(config.model_name)
    if problem:
        problems.add("model_name", problem)
    if len(config.dataset_training) < 2 or problem:
        return
    for name in config.dataset_training:
        stem = dataset_model_name(config.model_name, name, len(config.dataset_training))
        if len(stem.encode()) > LONGEST_FILE_STEM:
            problems.add(
                f"dataset_training.{name}",
                f"names this dataset's files {stem[:40]!r}..., {len(stem.encode())} bytes; model_name and the "
                f"dataset's name together (with a '-') may take at most {LONGEST_FILE_STEM}",
            )


def check_device(device: str, problems: ProblemList) -> None:
    if not DEVICE.match(device):
        problems.add("device", f"{device!r} is not a device; use cpu, cuda, cuda:N or mps")


def _check_datasets(config: TrainConfig, problems: ProblemList) -> None:
    if not config.dataset_training:
        problems.add("dataset_training", "at least one dataset is required")
    for name, dataset in config.dataset_training.items():
        path = f"dataset_training.{name}"
        if not dataset.parts:
            problems.add(f"{path}.parts", "at least one part is required")
        interface = config.model.interfaces.get(dataset.model_interface)
        if interface is None:
            if config.model.interfaces:  # with none at all, model.interfaces is the one problem
                problems.add(
                    f"{path}.model_interface",
                    f"unknown interface {dataset.model_interface!r}"
                    + did_you_mean(dataset.model_interface, config.model.interfaces),
                )
            continue
        targets = interface.target_columns
        for target in targets:
            if target not in dataset.criterion:
                problems.add(f"{path}.criterion", f"missing a criterion for target {target!r}")
        for target, criterion in dataset.criterion.items():
            if target not in targets:
                problems.add(
                    f"{path}.criterion.{target}",
                    f"is not a target of interface {dataset.model_interface!r} (targets: {', '.join(targets)})",
                )
            elif criterion not in CRITERIA:
                problems.add(
                    f"{path}.criterion.{target}",
                    f"{criterion!r} is not allowed; choose one of {', '.join(CRITERIA)}"
                    + did_you_mean(criterion, CRITERIA),
                )
        weights = dataset.loss_weights or {}
        for target, weight in weights.items():
            if target not in targets:
                problems.add(
                    f"{path}.loss_weights.{target}", f"is not a target of interface {dataset.model_interface!r}"
                )
            elif weight < 0:
                problems.add(f"{path}.loss_weights.{target}", f"must be >= 0, got {weight}")
        if dataset.loss_weights is not None and not any(weights.get(t, 1.0) > 0 for t in targets):
            problems.add(f"{path}.loss_weights", "at least one target needs a positive weight")
        for column in dataset.class_share_log_columns or ():
            if column not in targets:
                problems.add(
                    f"{path}.class_share_log_columns",
                    f"{column!r} is not a target of interface {dataset.model_interface!r}",
                )
        if dataset.freeze is not None:
            _check_freeze(dataset.freeze, interface.ingestion, f"{path}.freeze", problems)


def _check_freeze(freeze: Any, ingestion: Any, path: str, problems: ProblemList) -> None:
    for scope in ("backbone", "ingestion", "adapter", "decoder"):
        node = getattr(freeze, scope)
        if node is not None:
            _check_freeze_node(node, ingestion if scope == "ingestion" else None, f"{path}.{scope}", problems)


def _check_freeze_node(node: Any, ingestion: Any, path: str, problems: ProblemList) -> None:
    if node.freeze is not None and node.freezing_except is not None:
        problems.add(path, "set either freeze or freezing_except, not both (they contradict each other)")
    for key in ("freeze", "freezing_except"):
        selectors = getattr(node, key)
        if selectors:
            check_selectors(selectors, f"{path}.{key}", problems)
    if node.branches is None:
        return
    children = (ingestion.branches or {}) if ingestion is not None else {}
    if not children:
        problems.add(f"{path}.branches", "only a composite ingestion has branches to select")
        return
    for name, child in node.branches.items():
        if name not in children:
            problems.add(
                f"{path}.branches.{name}",
                "unknown branch" + did_you_mean(name, children) + f"; branches: {', '.join(children)}",
            )
        else:
            _check_freeze_node(child, children[name], f"{path}.branches.{name}", problems)
