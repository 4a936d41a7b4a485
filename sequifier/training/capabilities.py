"""What this machine and today's training engine can run of a valid config.

Config validation (sequifier/config) knows no torch: here the device must exist, optimizer and
scheduler arguments must be ones the torch classes take, and valid choices the engine does not
implement yet are refused as "not supported yet", each with its path.
"""

from __future__ import annotations

import torch

from sequifier.config.schema import IngestionConfig, TrainConfig
from sequifier.config.typed import ProblemList
from sequifier.training.optimization import check_arguments

NOT_YET = "is not supported yet"


def check_supported(config: TrainConfig) -> None:
    """Raise every problem of a valid `config` on this machine and engine, each with its path."""
    problems = ProblemList()
    training = config.global_training
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        problems.add(
            "device", f"{config.device!r} was requested but CUDA is not available on this machine; use device: cpu"
        )
    check_arguments(training, problems)
    for name, dataset in config.dataset_training.items():
        path = f"dataset_training.{name}"
        if dataset.class_share_log_columns:
            problems.add(f"{path}.class_share_log_columns", NOT_YET)
    for key in (
        "distributed",
        "layer_autocast",
        "layer_type_dtypes",
        "save_interval_batches",
        "save_interval_minutes",
        "save_latest_interval_minutes",
        "save_interval_val_loss",
        "num_workers",
    ):
        if getattr(training, key):
            problems.add(f"global_training.{key}", NOT_YET)
    if training.torch_compile != "none":
        problems.add("global_training.torch_compile", f"{training.torch_compile!r} {NOT_YET}")
    for name, interface in config.model.interfaces.items():
        path = f"model.interfaces.{name}"
        _check_ingestion(interface.ingestion, f"{path}.ingestion", problems)
        if interface.decoder.support != 1:
            problems.add(f"{path}.decoder.support", f"values other than 1 are {NOT_YET.removeprefix('is ')}")
    problems.raise_if_any()


def _check_ingestion(node: IngestionConfig, path: str, problems: ProblemList) -> None:
    if node.type == "depth_transformer":
        problems.add(f"{path}.type", f"'depth_transformer' ingestion {NOT_YET}")
    if node.merge is not None and node.merge.type not in ("concat", "sum"):
        problems.add(f"{path}.merge.type", f"{node.merge.type!r} {NOT_YET}")
    for name, child in (node.branches or {}).items():
        _check_ingestion(child, f"{path}.branches.{name}", problems)
