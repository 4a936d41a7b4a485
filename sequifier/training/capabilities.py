"""What this machine and today's training engine can run of a valid config.

Config validation (sequifier/config) knows no torch: here the device must exist, optimizer and
scheduler arguments must be ones the torch classes take, and valid choices the engine does not
implement yet are refused as "not supported yet", each with its path.
"""

from __future__ import annotations

import torch

from sequifier.config.schema import TrainConfig
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
    if training.distributed and training.backend == "nccl":
        if not config.device.startswith("cuda"):
            problems.add(
                "global_training.backend",
                f"nccl needs CUDA devices, but device is {config.device!r}; use backend: gloo on the CPU",
            )
        elif not torch.distributed.is_nccl_available():
            problems.add("global_training.backend", "this torch build has no nccl; use backend: gloo")
    for key in (
        "layer_autocast",
        "layer_type_dtypes",
        "num_workers",
    ):
        if getattr(training, key):
            problems.add(f"global_training.{key}", NOT_YET)
    if training.torch_compile != "none":
        problems.add("global_training.torch_compile", f"{training.torch_compile!r} {NOT_YET}")
    problems.raise_if_any()
