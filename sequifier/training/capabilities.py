"""What this machine can run of a valid config.

Config validation (sequifier/config) knows no torch: here the device and the distributed backend
must exist, and optimizer and scheduler arguments must be ones the torch classes take and accept,
each problem with its path.
"""

from __future__ import annotations

import torch

from sequifier.config.schema import TrainConfig
from sequifier.config.typed import ProblemList
from sequifier.training.call_arguments import check_arguments


def check_supported(config: TrainConfig) -> None:
    """Raise every problem of a valid `config` on this machine and engine, each with its path."""
    problems = ProblemList()
    training = config.global_training
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        problems.add(
            "device", f"{config.device!r} was requested but CUDA is not available on this machine; use device: cpu"
        )
    if config.device == "mps" and not torch.backends.mps.is_available():
        problems.add("device", "'mps' was requested but this machine and torch build have no MPS; use device: cpu")
    calls = {"optimizer": training.optimizer, "scheduler": training.scheduler}
    check_arguments(config.device, training.learning_rate, calls, problems)
    if training.distributed and training.backend == "nccl":
        if not config.device.startswith("cuda"):
            problems.add(
                "global_training.backend",
                f"nccl needs CUDA devices, but device is {config.device!r}; use backend: gloo on the CPU",
            )
        elif not torch.distributed.is_nccl_available():
            problems.add("global_training.backend", "this torch build has no nccl; use backend: gloo")
    problems.raise_if_any()
