"""Per-target losses over counted targets, their weighted aggregate, and persistence baselines."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from sequifier.config.network import ColumnSpec
from sequifier.config.resolve import RunSpec
from sequifier.model.network import SequifierNetwork

ELEMENTWISE = {
    "CrossEntropyLoss": lambda out, target: F.cross_entropy(out, target, reduction="none"),
    "MSELoss": lambda out, target: F.mse_loss(out, target, reduction="none"),
    "L1Loss": lambda out, target: F.l1_loss(out, target, reduction="none"),
    "HuberLoss": lambda out, target: F.huber_loss(out, target, reduction="none"),
}


class TargetLosses:
    """Sums and counts of each target's loss over the targets that count (valid and predictable)."""

    def __init__(
        self,
        targets: list[ColumnSpec],
        criteria: dict[str, str],
        weights: dict[str, float],
        class_ids: dict[str, Tensor],
    ):
        self.targets = targets
        self.criteria = criteria
        self.weights = {t.name: weights.get(t.name, 1.0) for t in targets}
        self.output_index = {}
        for target in targets:
            if target.kind == "categorical":
                lookup = torch.full((target.n_classes,), -1, dtype=torch.int64)
                lookup[class_ids[target.name]] = torch.arange(len(class_ids[target.name]))
                self.output_index[target.name] = lookup

    def counted(self, name: str, target: Tensor, valid: Tensor) -> tuple[Tensor, Tensor]:
        """Target values as the loss needs them and the mask of targets that count."""
        if name in self.output_index:
            index = self.output_index[name].to(target.device)[target.clamp(min=0)]
            return index, valid & (index >= 0)
        return target, valid

    def counts(self, targets: dict[str, Tensor], valid: Tensor) -> dict[str, Tensor]:
        """Per target, the number of counted targets."""
        return {t.name: self.counted(t.name, targets[t.name], valid)[1].sum() for t in self.targets}

    def sums(
        self, outputs: dict[str, Tensor], targets: dict[str, Tensor], valid: Tensor
    ) -> dict[str, tuple[Tensor, Tensor]]:
        """Per target: (sum of losses, number of counted targets)."""
        result = {}
        for target in self.targets:
            values, mask = self.counted(target.name, targets[target.name], valid)
            out = outputs[target.name][mask]
            losses = ELEMENTWISE[self.criteria[target.name]](out, values[mask])
            result[target.name] = (losses.sum(), mask.sum())
        return result

    def aggregate(self, means: dict[str, Tensor | float]) -> Tensor | float:
        """The weighted sum of per-target mean losses: what is optimized and reported.

        Zero-weight targets are left out, so they put nothing (not even zeros) into the backward pass.
        """
        return sum(self.weights[name] * value for name, value in means.items() if self.weights[name] > 0)


def persistence_loss_categorical(repeats: int, total: int, n_predictable: int, unprecedented: int = 0) -> float:
    """Cross-entropy of the calibrated persistence forecast.

    It gives the last observed value the probability p that values repeat (fitted on the
    same targets) and spreads 1-p evenly over the other predictable classes. The `unprecedented`
    targets, after the window's padding or a value no class stands for, have no last value among the
    classes: there it spreads 1 evenly over all of them.
    """
    if total == 0:
        return float("nan")
    preceded = total - unprecedented
    uniform = unprecedented * math.log(n_predictable)
    if preceded == 0:
        return uniform / total
    p = min(max(repeats / preceded, 1e-6), 1 - 1e-6)
    others = max(n_predictable - 1, 1)
    return (uniform - repeats * math.log(p) - (preceded - repeats) * math.log((1 - p) / others)) / total


def dataset_losses(spec: RunSpec, network: SequifierNetwork, dataset_name: str) -> TargetLosses:
    """The losses a dataset trains: its interface's targets, criteria, weights and predictable classes."""
    dataset = spec.config.dataset_training[dataset_name]
    interface = dataset.model_interface
    columns = spec.columns[interface]
    targets = [columns[c] for c in spec.config.model.interfaces[interface].target_columns]
    decoder = network.interfaces[interface].decoder
    class_ids = {t.name: decoder.class_ids(t.name).cpu() for t in targets if t.kind == "categorical"}
    return TargetLosses(targets, dict(dataset.criterion), dict(dataset.loss_weights or {}), class_ids)
