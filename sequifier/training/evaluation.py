"""Validation: per-target and aggregate loss of the model beside the persistence baseline."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from sequifier.data.views import ViewShape, WindowTensors, gather_batch
from sequifier.model.network import SequifierNetwork
from sequifier.training.losses import ELEMENTWISE, TargetLosses, persistence_loss_categorical


@dataclass(frozen=True)
class Evaluation:
    losses: dict[str, float]
    baseline: dict[str, float]
    loss: float
    baseline_loss: float
    targets_counted: int


@torch.no_grad()
def evaluate(network: SequifierNetwork, interface: str, windows: WindowTensors, views: tuple[Tensor, Tensor], shape: ViewShape,
             input_columns: tuple[str, ...], losses: TargetLosses, batch_size: int, device: torch.device) -> Evaluation:
    """Mean loss per target over every counted validation target, and the same for persistence."""
    was_training = network.training
    network.eval()
    window_index, end_slot = views
    sums = {t.name: 0.0 for t in losses.targets}
    counts = {t.name: 0 for t in losses.targets}
    baseline_sums = {t.name: 0.0 for t in losses.targets}
    repeats = {t.name: 0 for t in losses.targets}
    target_names = tuple(t.name for t in losses.targets)
    for start in range(0, len(window_index), batch_size):
        part = slice(start, start + batch_size)
        batch = gather_batch(windows, window_index[part], end_slot[part], shape, input_columns, target_names)
        inputs = {k: v.to(device) for k, v in batch.inputs.items()}
        pad = batch.left_pad_lengths.to(device) if batch.left_pad_lengths is not None else None
        outputs = {k: v.float().cpu() for k, v in network(interface, inputs, pad).items()}
        for name, (total, count) in losses.sums(outputs, batch.targets, batch.target_valid).items():
            sums[name] += float(total)
            counts[name] += int(count)
        for target in losses.targets:
            values, mask = losses.counted(target.name, batch.targets[target.name], batch.target_valid)
            previous = batch.persistence[target.name]
            if target.kind == "categorical":
                repeats[target.name] += int((batch.targets[target.name] == previous)[mask].sum())
            else:
                criterion = ELEMENTWISE[losses.criteria[target.name]]
                baseline_sums[target.name] += float(criterion(previous[mask], values[mask]).sum())
    network.train(was_training)
    means = {name: sums[name] / counts[name] if counts[name] else float("nan") for name in sums}
    baseline = {}
    for target in losses.targets:
        if target.kind == "categorical":
            n_predictable = int((losses.output_index[target.name] >= 0).sum())
            baseline[target.name] = persistence_loss_categorical(repeats[target.name], counts[target.name], n_predictable)
        else:
            baseline[target.name] = baseline_sums[target.name] / counts[target.name] if counts[target.name] else float("nan")
    return Evaluation(means, baseline, float(losses.aggregate(means)), float(losses.aggregate(baseline)), max(counts.values(), default=0))
