"""Stop a run whose loss stops being finite: one line saying where, with the last finite loss and the likely causes."""

from __future__ import annotations

import math

import torch

from sequifier.config.errors import UserError


class TrainingDiverged(UserError):
    """The training loss (or the weights) became non-finite; nothing is exported or checkpointed from that state."""


def check_loss(
    sums: dict[str, tuple[torch.Tensor, torch.Tensor]],
    inputs: dict[str, torch.Tensor],
    where: str,
    last_finite: float | None,
    learning_rate: float,
    float16_parameters: bool = False,
    before_any_update: bool = False,
) -> None:
    """Raise TrainingDiverged when a target's loss sum is not finite, naming it and any non-finite input column."""
    for target, (total, _) in sums.items():
        value = float(total.detach())
        if math.isfinite(value):
            continue
        bad_inputs = [name for name, x in inputs.items() if x.is_floating_point() and not bool(torch.isfinite(x).all())]
        if bad_inputs:
            cause = f"non-finite values in the real input column(s) {', '.join(bad_inputs)} of this batch"
        elif float16_parameters:
            cause = (
                "float16 parameters (global_training.layer_type_dtypes), with which Adam-type optimizers usually "
                "diverge; use bfloat16 or float32 layer types, or autocast: fp16 with float32 parameters"
            )
        elif before_any_update:
            cause = (
                "values too large for the float32 arithmetic of the model and loss, since no update has happened "
                "yet (a real column not normalized? preprocess with normalize_real_columns: true, or rescale it)"
            )
        else:
            cause = (
                f"a learning rate too high for this model (global_training.learning_rate {learning_rate:g}) or "
                "exploding gradients (set global_training.gradient_clip)"
            )
        last = f"{last_finite:.6g}" if last_finite is not None else "none yet"
        raise TrainingDiverged(
            "training",
            f"the loss of target {target!r} became {value} at {where} (last finite loss {last}); likely cause: {cause}",
        )


def check_weights(network: torch.nn.Module, where: str) -> None:
    """Raise TrainingDiverged before a checkpoint or export when any weight is not finite."""
    for name, parameter in network.named_parameters():
        local = parameter.to_local() if hasattr(parameter, "to_local") else parameter  # an FSDP rank checks its shard
        if not bool(torch.isfinite(local).all()):
            raise TrainingDiverged(
                "training", f"weight {name} is not finite at {where}; nothing was written (lower the learning rate)"
            )
