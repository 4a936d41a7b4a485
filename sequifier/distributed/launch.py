"""Dispatches a resolved run to the processes that train it (in-process for a single worker)."""

from __future__ import annotations

from sequifier.config.resolve import RunSpec
from sequifier.training.engine import TrainResult, train


def launch(spec: RunSpec) -> TrainResult:
    """Train `spec`; every launcher enters training through here with the same plain spec."""
    return train(spec)
