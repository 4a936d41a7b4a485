"""What a finished training run reports to the command that started it."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class TrainResult:
    model_name: str
    best_epoch: int
    monitored_loss: float
    final_validation: dict[str, float]
    final_baseline: dict[str, float]
    exported: list[str]
    samples_per_second: float = math.nan
    log_folders: tuple[str, ...] = ()
    evaluated: bool = False  # the config has an evaluation section
