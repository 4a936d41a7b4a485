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
    if training.num_threads is not None and training.num_threads < 1:
        problems.add("global_training.num_threads", f"must be at least 1, got {training.num_threads}")
    if training.distributed:
        problems.add("global_training.distributed", NOT_YET)
    problems.raise_if_any()
