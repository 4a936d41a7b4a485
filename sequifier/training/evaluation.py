"""Validation: per-target and aggregate loss of the model beside the persistence baseline.

Totals are sums and counts, so the parts of a source combine exactly.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, ContextManager

import torch

from sequifier.data.datasets import SplitData
from sequifier.data.views import ViewShape
from sequifier.model.network import SequifierNetwork
from sequifier.training.losses import ELEMENTWISE, TargetLosses, persistence_loss_categorical


@dataclass
class Totals:
    """Sums over counted targets: model loss, baseline loss (reals), repeats and targets without a predicted class
    before them (categories), counts."""

    loss: dict[str, float] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)
    repeats: dict[str, int] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)
    unprecedented: dict[str, int] = field(default_factory=dict)

    def add(self, other: Totals) -> None:
        for mine, theirs in (
            (self.loss, other.loss),
            (self.baseline, other.baseline),
            (self.repeats, other.repeats),
            (self.count, other.count),
            (self.unprecedented, other.unprecedented),
        ):
            for key, value in theirs.items():
                mine[key] = mine.get(key, 0) + value


@dataclass(frozen=True)
class Evaluation:
    losses: dict[str, float]
    baseline: dict[str, float]
    loss: float
    baseline_loss: float


@torch.no_grad()
def evaluate_split(
    network: SequifierNetwork,
    interface: str,
    split: SplitData,
    shape: ViewShape,
    input_columns: tuple[str, ...],
    losses: TargetLosses,
    batch_size: int,
    device: torch.device,
    autocast: ContextManager | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> Totals:
    """Loss and persistence totals of every counted target of one validation split (forward under `autocast`).

    `on_batch(views)` is told each batch's number of views as it is done (a progress display).
    """
    was_training = network.training
    network.eval()
    totals = Totals()
    names = tuple(t.name for t in losses.targets)
    for start in range(0, len(split), batch_size):
        part = slice(start, start + batch_size)
        batch = split.gathered(part, shape, input_columns, names)
        inputs = {k: v.to(device) for k, v in batch.inputs.items()}
        pad = batch.left_pad_lengths.to(device) if batch.left_pad_lengths is not None else None
        with autocast or contextlib.nullcontext():
            outputs = {k: v.float().cpu() for k, v in network(interface, inputs, pad).items()}
        step = Totals()
        for name, (total, count) in losses.sums(outputs, batch.targets, batch.target_valid).items():
            step.loss[name], step.count[name] = float(total), int(count)
        for target in losses.targets:
            values, mask = losses.counted(target.name, batch.targets[target.name], batch.target_valid)
            previous = batch.persistence[target.name]
            if target.kind == "categorical":
                predicted = losses.output_index[target.name][previous.clamp(min=0)] >= 0
                preceded = mask & batch.persistence_known & predicted
                step.repeats[target.name] = int((batch.targets[target.name] == previous)[preceded].sum())
                step.unprecedented[target.name] = int((mask & ~preceded).sum())
            else:
                step.baseline[target.name] = float(
                    ELEMENTWISE[losses.criteria[target.name]](previous[mask], values[mask]).sum()
                )
        totals.add(step)
        if on_batch is not None:
            on_batch(len(batch.target_valid))
    network.train(was_training)
    return totals


def counted_targets(split: SplitData, shape: ViewShape, losses: TargetLosses, batch_size: int) -> Totals:
    """Totals of one validation split holding only how many targets of each target column count (no forward)."""
    names = tuple(t.name for t in losses.targets)
    totals = Totals(count=dict.fromkeys(names, 0))
    for start in range(0, len(split), batch_size):
        batch = split.gathered(slice(start, start + batch_size), shape, (), names)  # targets only
        totals.add(Totals(count={k: int(v) for k, v in losses.counts(batch.targets, batch.target_valid).items()}))
    return totals


def summarize(totals: Totals, losses: TargetLosses) -> Evaluation:
    """Mean loss per target and the weighted aggregate, for the model and the persistence baseline."""
    means, baseline = {}, {}
    for target in losses.targets:
        count = totals.count.get(target.name, 0)
        means[target.name] = totals.loss.get(target.name, 0.0) / count if count else float("nan")
        if target.kind == "categorical":
            n_predictable = int((losses.output_index[target.name] >= 0).sum())
            baseline[target.name] = persistence_loss_categorical(
                totals.repeats.get(target.name, 0), count, n_predictable, totals.unprecedented.get(target.name, 0)
            )
        else:
            baseline[target.name] = totals.baseline.get(target.name, 0.0) / count if count else float("nan")
    return Evaluation(means, baseline, float(losses.aggregate(means)), float(losses.aggregate(baseline)))
