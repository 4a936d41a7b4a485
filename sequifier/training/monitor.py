"""The monitored metric: which epoch's model is best, and when training stops early."""

from __future__ import annotations

import math

from sequifier.config.schema import TrainConfig
from sequifier.training.evaluation import Evaluation


class Monitor:
    """Tracks the monitored loss: an evaluation source's aggregate, or the training loss without evaluation."""

    def __init__(self, config: TrainConfig):
        evaluation = config.evaluation
        monitor = evaluation.monitor if evaluation else None
        self.source = (monitor.source if monitor else evaluation.sources[0].source) if evaluation else None
        self.maximize = bool(monitor and monitor.mode == "max")  # warned about by config_warnings
        self.patience = config.global_training.early_stopping_patience
        self.best_value = -math.inf if self.maximize else math.inf
        self.best_epoch = 0

    @property
    def description(self) -> str:
        return f"validation loss of {self.source}" if self.source else "training loss"

    def update(self, epoch: int, evaluations: dict[str, Evaluation], training_loss: float) -> bool:
        """Record an epoch's value; True when it is the best so far."""
        value = evaluations[self.source].loss if self.source else training_loss
        better = value > self.best_value if self.maximize else value < self.best_value
        if better and not math.isnan(value):
            self.best_value, self.best_epoch = value, epoch
            return True
        return False

    def should_stop(self, epoch: int) -> bool:
        return self.patience is not None and epoch - self.best_epoch >= self.patience
