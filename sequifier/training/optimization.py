"""Optimizers, learning-rate schedulers and loss scalers: built from the config, stepped, checkpointed."""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any, Callable, Iterable

import torch

from sequifier.config.errors import UserError
from sequifier.config.validate_training import ONE_CYCLE_PRODUCT, given_schedule_length
from sequifier.training.precision import LossScaler, needs_loss_scaling

TAKES_TOTAL_STEPS = {
    "OneCycleLR": "total_steps",
    "PolynomialLR": "total_iters",
    "LinearLR": "total_iters",
    "CosineAnnealingLR": "T_max",
}
logger = logging.getLogger("sequifier")
DEVICE_BOUND = ("fused", "capturable")  # optimizer arguments torch accepts on some devices only
LR_STEPS_CHECKED = 100_000  # scheduler steps simulated before training, at a few microseconds each
OWNED_ARGUMENTS = {"params", "optimizer", "lr", "last_epoch", "verbose"}  # set by sequifier, never by a config


def torch_class(kind: str, name: str) -> type:
    """The torch.optim ("optimizer") or torch.optim.lr_scheduler ("scheduler") class `name`."""
    module = torch.optim if kind == "optimizer" else torch.optim.lr_scheduler
    return getattr(module, name)


def build_optimizer(
    parameters: Iterable[torch.nn.Parameter], learning_rate: float, config: dict[str, Any]
) -> torch.optim.Optimizer:
    arguments = {k: v for k, v in config.items() if k != "name"}
    return torch_class("optimizer", config["name"])(parameters, lr=learning_rate, **arguments)


def build_scheduler(optimizer: torch.optim.Optimizer, config: dict[str, Any] | None, total_steps: int) -> Any:
    """The configured scheduler; a duration argument it accepts, when the config gives no length, becomes
    `total_steps`."""
    if not config:
        return None
    name = config["name"]
    arguments = {k: v for k, v in config.items() if k != "name"}
    duration = TAKES_TOTAL_STEPS.get(name)
    if duration and duration not in arguments and given_schedule_length(config) is None:
        arguments[duration] = total_steps
    return torch_class("scheduler", name)(optimizer, **arguments)


def check_scheduler_length(config: dict[str, Any] | None, steps: int, per_batch: bool, continuous: bool) -> None:
    """OneCycleLR raises once stepped past its configured length: a length shorter than the `steps` a phase
    (or, `continuous`, the run) takes (optimizer steps when stepped per batch, else epochs) is refused before the
    first step."""
    given = given_schedule_length(config)
    if given is None or config["name"] != "OneCycleLR":
        return
    where, length = given
    if length < steps:
        unit = "optimizer steps" if per_batch else "epochs"
        span, left_out = (
            ("the run", "it then lasts the run") if continuous else ("a phase", "each phase then gets its own length")
        )
        omit = "leave both out" if where == ONE_CYCLE_PRODUCT else "leave it out"
        raise UserError(
            where,
            f"gives OneCycleLR {length} steps, but {span} steps it {steps} times (its {unit}) and OneCycleLR "
            f"cannot step past its end; make it at least {steps}, or {omit} ({left_out})",
        )


def check_filled_durations(training, durations: list[int], per_batch: bool, continuous: bool) -> None:
    """A scheduler whose duration sequifier sets (the config leaves it out) must survive being stepped through it:
    torch refuses some combinations only while stepping (OneCycleLR with pct_start x total_steps = 1)."""
    call = training.scheduler
    argument = TAKES_TOTAL_STEPS.get(call["name"]) if call else None
    if argument is None or argument in call or given_schedule_length(call) is not None:
        return
    for duration in sorted(set(durations)):
        calls = {"optimizer": without_device_bound(training.optimizer), "scheduler": call}
        error = trial_refusal(training.learning_rate, calls, duration)
        unit = "optimizer steps" if per_batch else "epochs"
        span = "the run's" if continuous else "a phase's"
        if error is not None:
            said = " ".join(str(error).split())[:300] or type(error).__name__
            settable = per_batch or continuous  # an epoch-stepped length in reset mode is the phase's alone
            fix = f"set global_training.scheduler.{argument}, or change" if settable else "change the epochs or"
            raise UserError(
                "global_training.scheduler",
                f"torch fails stepping {call['name']} through {argument}={duration} ({span} {unit}, set by sequifier "
                f"since the config leaves {argument} out): {said}; {fix} its other arguments (OneCycleLR: "
                "pct_start x total_steps must not be 1), or step it per batch (global_training.scheduler_step_on: "
                "batch)",
            )
        if call["name"] == "OneCycleLR" and duration == 1:
            logger.warning(
                "OneCycleLR lasts %s %s (1, set by sequifier), so it trains at its final, smallest learning "
                "rate throughout; step it per batch (global_training.scheduler_step_on: batch) or train more epochs",
                span,
                unit,
            )


def without_device_bound(call: dict[str, Any] | None) -> dict[str, Any] | None:
    """A call without the optimizer arguments torch accepts on some devices only."""
    return None if call is None else {k: v for k, v in call.items() if k not in DEVICE_BOUND}


def trial_refusal(
    learning_rate: float, calls: dict[str, dict | None], duration: int, steps: int | None = None
) -> Exception | None:
    """What torch raises when it builds these calls on a stand-in parameter (the scheduler lasting `duration` where
    its call leaves that out), steps the optimizer once and the scheduler `steps` times (default `duration`); None
    when it raises nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _, scheduler = _stepped_stand_in(learning_rate, calls, duration)
            for _ in range(duration if steps is None else steps):
                if scheduler is not None:
                    scheduler.step()
        except Exception as error:  # torch raises ValueError, TypeError, RuntimeError, ZeroDivisionError and more
            return error
    return None


def _stepped_stand_in(learning_rate: float, calls: dict[str, dict | None], duration: int) -> tuple[Any, Any]:
    """The calls' optimizer, stepped once, and scheduler, built on a stand-in parameter."""
    parameter = torch.nn.Parameter(torch.zeros(4))
    optimizer = build_optimizer([parameter], learning_rate, calls["optimizer"])
    scheduler = build_scheduler(optimizer, calls.get("scheduler"), duration)
    parameter.grad = torch.ones_like(parameter)
    optimizer.step()
    return optimizer, scheduler


def check_scheduled_learning_rates(training, durations: list[int], per_batch: bool) -> None:
    """The learning rates the scheduler gives over each duration (those the updates use, up to LR_STEPS_CHECKED
    of them): a negative or non-finite one is refused (the updates would climb the loss, or make the weights NaN),
    one that stays at 0 to the end (or over the steps checked) is warned about (the updates from then on change
    nothing)."""
    if not training.scheduler:
        return
    calls = {"optimizer": without_device_bound(training.optimizer), "scheduler": training.scheduler}
    unit = "optimizer step" if per_batch else "epoch"
    for duration in sorted(set(durations)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimizer, scheduler = _stepped_stand_in(training.learning_rate, calls, duration)
            zero_since = None
            last = min(duration, LR_STEPS_CHECKED)
            for step in range(1, last + 1):
                if step > 1:
                    try:
                        scheduler.step()
                    except Exception:  # refused by the checks above where sequifier sets the length, else by the run
                        last = step - 1
                        break
                rate = min(group["lr"] for group in optimizer.param_groups)
                if rate < 0 or not math.isfinite(rate):
                    kind, consequence = (
                        ("negative", "climb the loss") if rate < 0 else ("non-finite", "make the weights NaN")
                    )
                    raise UserError(
                        "global_training.scheduler",
                        f"{training.scheduler['name']} makes the learning rate {kind} ({rate:.4g}) at {unit} {step} of "
                        f"{duration}, and updates would then {consequence}; change its arguments",
                    )
                zero_since = (zero_since or step) if rate == 0 else None
        if zero_since is not None and (zero_since < last or last == duration):
            logger.warning(
                "global_training.scheduler: %s keeps the learning rate at 0 from %s %d of %d on; the updates from "
                "then on change nothing",
                training.scheduler["name"],
                unit,
                zero_since,
                duration,
            )


class OptimizationLifecycle:
    """Optimizer, scheduler and loss scaler across phases: new ones at every phase (reset) or one set for
    the run (continuous).

    A scheduler's duration argument, when it takes one and the config leaves it out, is the
    active phase's epochs (or optimizer steps, when stepped per batch) in reset mode, and
    the sum over all phases in continuous mode.
    """

    def __init__(self, parameters: list[torch.nn.Parameter], training, phase_epochs: list[int], phase_steps: list[int]):
        self.parameters = parameters
        self.training = training
        self.per_batch = training.scheduler_step_on == "batch"
        durations = phase_steps if self.per_batch else phase_epochs
        self.durations = durations if training.reset_optimization_on_phase else [sum(durations)] * len(durations)
        continuous = not training.reset_optimization_on_phase
        check_scheduler_length(training.scheduler, max(self.durations, default=0), self.per_batch, continuous)
        check_filled_durations(training, self.durations, self.per_batch, continuous)
        check_scheduled_learning_rates(training, self.durations, self.per_batch)
        self.optimizer: torch.optim.Optimizer | None = None
        self.scheduler: Any = None
        self.scaler = LossScaler(False)
        self.built_for_phase: int | None = None
        self.restored_without_step = False

    def begin_phase(self, index: int) -> None:
        if self.optimizer is None or self.training.reset_optimization_on_phase:
            self._build(index)

    def _build(self, index: int) -> None:
        self.optimizer = build_optimizer(self.parameters, self.training.learning_rate, self.training.optimizer)
        self.scheduler = build_scheduler(self.optimizer, self.training.scheduler, self.durations[index])
        self.scaler = LossScaler(needs_loss_scaling(self.training))
        self.built_for_phase = index

    def state_dict(self) -> dict[str, Any]:
        """The active optimizer, scheduler and scaler and the phase they were built for (None before the first)."""
        if self.optimizer is None:
            return {"phase": None}
        return {
            "phase": self.built_for_phase,
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "scaler": self.scaler.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any], load_optimizer: Callable | None = None) -> None:
        """Rebuild the optimizer, scheduler and scaler of the saved phase and restore their state exactly.

        `load_optimizer(optimizer, saved)` replaces `optimizer.load_state_dict` (FSDP loads whole states into shards).
        """
        if state["phase"] is None:
            return
        self._build(state["phase"])
        if load_optimizer is None:
            self.optimizer.load_state_dict(state["optimizer"])
        else:
            load_optimizer(self.optimizer, state["optimizer"])
        self.restored_without_step = True
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state.get("scaler", {}))

    def scaled(self, loss: torch.Tensor) -> torch.Tensor:
        """The loss to backpropagate: scaled when float16 is in use."""
        return self.scaler.scaled(loss)

    def step(self, advances_schedule: bool = True) -> None:
        """One update from the accumulated, averaged gradients (frozen ones already removed).

        They are unscaled and checked for overflow (an overflow skips the update), then clipped
        to global_training.gradient_clip. A batch-stepped scheduler steps after it when `advances_schedule`.
        """
        self.restored_without_step = False
        if self.scaler.unscale(p.grad for p in self.parameters if p.grad is not None):
            if self.training.gradient_clip:
                torch.nn.utils.clip_grad_norm_(self.parameters, self.training.gradient_clip)
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.scheduler is not None and self.per_batch and advances_schedule:
            self.scheduler.step()

    def end_epoch(self) -> None:
        if self.scheduler is not None and not self.per_batch:
            with warnings.catch_warnings():
                if self.restored_without_step:  # the optimizer stepped before the checkpoint, in the earlier process
                    warnings.filterwarnings(
                        "ignore", message="Detected call of `lr_scheduler.step", category=UserWarning
                    )
                self.scheduler.step()

    @property
    def learning_rate(self) -> float:
        return self.optimizer.param_groups[0]["lr"]
