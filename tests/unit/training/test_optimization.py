"""Reset and continuous optimization across a phase boundary."""

from __future__ import annotations

import re

import pytest
import torch

from sequifier.config.errors import UserError
from sequifier.config.schema import GlobalTrainingConfig
from sequifier.training.optimization import OptimizationLifecycle


def lifecycle(reset: bool, step_on: str, scheduler: dict) -> OptimizationLifecycle:
    training = GlobalTrainingConfig(
        context_length=4,
        learning_rate=0.1,
        optimizer={"name": "AdamW"},
        scheduler=scheduler,
        scheduler_step_on=step_on,
        reset_optimization_on_phase=reset,
    )
    parameter = torch.nn.Parameter(torch.ones(3))
    return OptimizationLifecycle([parameter], training, phase_epochs=[2, 2], phase_steps=[3, 3])


def run_epochs(cycle: OptimizationLifecycle, steps_per_epoch: int) -> list[float]:
    """Learning rate seen at every optimizer step over two phases of two epochs."""
    rates = []
    for phase in (0, 1):
        cycle.begin_phase(phase)
        for _ in range(2):
            for _ in range(steps_per_epoch):
                cycle.parameters[0].grad = torch.ones(3)
                rates.append(cycle.learning_rate)
                cycle.step()
            cycle.end_epoch()
    return rates


@pytest.mark.parametrize("reset, expected", [(True, [0.1, 0.05, 0.1, 0.05]), (False, [0.1, 0.05, 0.025, 0.0125])])
def test_epoch_stepped_scheduler(reset, expected):
    rates = run_epochs(lifecycle(reset, "epoch", {"name": "StepLR", "step_size": 1, "gamma": 0.5}), steps_per_epoch=1)
    assert rates == pytest.approx(expected)


def test_batch_stepped_scheduler_lasts_each_phase_in_reset_mode_and_the_run_in_continuous_mode():
    reset = run_epochs(
        lifecycle(True, "batch", {"name": "LinearLR", "start_factor": 1.0, "end_factor": 0.0}), steps_per_epoch=1
    )
    assert reset[:2] == pytest.approx([0.1, 0.1 * 2 / 3]) and reset[2:] == pytest.approx(reset[:2])
    continuous = run_epochs(
        lifecycle(False, "batch", {"name": "LinearLR", "start_factor": 1.0, "end_factor": 0.0}), steps_per_epoch=1
    )
    assert continuous == pytest.approx([0.1 * (1 - i / 6) for i in range(4)])


@pytest.mark.parametrize("reset", [True, False])
def test_optimizer_state_across_the_phase_boundary(reset):
    cycle = lifecycle(reset, "epoch", None)
    cycle.begin_phase(0)
    cycle.parameters[0].grad = torch.ones(3)
    cycle.step()
    first = cycle.optimizer
    cycle.begin_phase(1)
    state = cycle.optimizer.state.get(cycle.parameters[0], {})
    if reset:
        assert cycle.optimizer is not first and state == {}
    else:
        assert cycle.optimizer is first and int(state["step"]) == 1


@pytest.mark.parametrize(
    "reset, scheduler, refused",
    [
        (True, {"name": "OneCycleLR", "max_lr": 0.1, "total_steps": 2}, "total_steps"),  # each phase steps it 3 times
        (True, {"name": "OneCycleLR", "max_lr": 0.1, "total_steps": 3}, None),
        (False, {"name": "OneCycleLR", "max_lr": 0.1, "total_steps": 5}, "total_steps"),  # the run steps it 6 times
        (False, {"name": "OneCycleLR", "max_lr": 0.1, "epochs": 2, "steps_per_epoch": 2}, "epochs x steps_per_epoch"),
        (False, {"name": "OneCycleLR", "max_lr": 0.1, "total_steps": 6}, None),
    ],
)
def test_a_one_cycle_shorter_than_its_phase_is_refused_before_training(reset, scheduler, refused):
    """OneCycleLR raises when stepped past its length: such a length is a config error, not a crash mid-run."""
    if refused is None:
        cycle = lifecycle(reset, "batch", scheduler)
        cycle.begin_phase(0)
        for _ in range(3 if reset else 6):  # what the plan gives a phase (reset) or the run (continuous)
            cycle.parameters[0].grad = torch.ones(3)
            cycle.step()
        return
    with pytest.raises(UserError) as error:
        lifecycle(reset, "batch", scheduler)
    assert error.value.where == f"global_training.scheduler.{refused}" and "cannot step past its end" in str(
        error.value
    )


@pytest.mark.parametrize("reset", [True, False])
def test_a_one_cycle_length_given_as_epochs_times_steps_per_epoch_is_kept_as_total_steps_is(reset):
    """torch's two spellings of one length give one schedule: sequifier sets the length only where none is given."""
    spellings = ({"total_steps": 20}, {"epochs": 4, "steps_per_epoch": 5})
    schedules = []
    for spelling in spellings:
        cycle = lifecycle(reset, "batch", {"name": "OneCycleLR", "max_lr": 0.1, **spelling})
        schedules.append(run_epochs(cycle, steps_per_epoch=1))
        assert cycle.scheduler.total_steps == 20
    assert schedules[0] == pytest.approx(schedules[1])


@pytest.mark.parametrize("reset", [True, False])
def test_a_one_cycle_torch_cannot_step_through_the_length_sequifier_sets_is_refused_before_training(reset):
    """pct_start 0.2 of 5 steps leaves OneCycleLR a warm-up of no length: torch divides by zero while stepping."""
    scheduler = {"name": "OneCycleLR", "max_lr": 0.1, "pct_start": 0.2, "cycle_momentum": False}
    training = GlobalTrainingConfig(
        context_length=4,
        learning_rate=0.1,
        optimizer={"name": "AdamW"},
        scheduler=scheduler,
        scheduler_step_on="epoch",
        reset_optimization_on_phase=reset,
    )
    phases = [5, 3] if reset else [2, 3]  # a phase of 5 epochs, or a run of 5
    with pytest.raises(UserError) as error:
        OptimizationLifecycle([torch.nn.Parameter(torch.ones(3))], training, phase_epochs=phases, phase_steps=[9, 9])
    assert error.value.where == "global_training.scheduler"
    assert "total_steps=5" in error.value.problem and "division by zero" in error.value.problem
    span = "a phase's epochs" if reset else "the run's epochs"
    assert span in error.value.problem


def test_a_too_short_one_cycle_in_continuous_mode_names_the_runs_steps():
    with pytest.raises(UserError) as error:
        lifecycle(False, "batch", {"name": "OneCycleLR", "max_lr": 0.1, "total_steps": 5})
    assert "the run steps it 6 times" in error.value.problem and "it then lasts the run" in error.value.problem


@pytest.mark.parametrize(
    "scheduler, refused",
    [
        ({"name": "OneCycleLR", "max_lr": 0.01, "pct_start": 0.5}, None),  # degenerate only over 2 steps
        ({"name": "OneCycleLR", "max_lr": 0.01, "pct_start": 0.5, "three_phase": True}, None),
        ({"name": "OneCycleLR", "max_lr": 0.1, "anneal_strategy": "lin"}, "global_training.scheduler.anneal_strategy"),
    ],
)
def test_config_checks_refuse_only_what_fails_whatever_the_length_sequifier_sets(scheduler, refused):
    from sequifier.config.typed import ProblemList
    from sequifier.training.call_arguments import check_arguments

    problems = ProblemList()
    check_arguments("cpu", 0.001, {"optimizer": {"name": "AdamW"}, "scheduler": scheduler}, problems)
    assert [problem.where for problem in problems.problems] == ([refused] if refused else [])


def test_a_one_cycle_of_one_epoch_is_warned_about(caplog):
    scheduler = {"name": "OneCycleLR", "max_lr": 0.1}
    training = GlobalTrainingConfig(
        context_length=4, learning_rate=0.1, optimizer={"name": "AdamW"}, scheduler=scheduler, scheduler_step_on="epoch"
    )
    with caplog.at_level("WARNING", logger="sequifier"):
        OptimizationLifecycle([torch.nn.Parameter(torch.ones(3))], training, phase_epochs=[1], phase_steps=[9])
    assert "trains at its final, smallest learning rate throughout" in caplog.text


def test_a_refused_epoch_stepped_length_in_reset_mode_is_not_told_to_set_it():
    scheduler = {"name": "OneCycleLR", "max_lr": 0.1, "pct_start": 0.2}
    training = GlobalTrainingConfig(
        context_length=4, learning_rate=0.1, optimizer={"name": "AdamW"}, scheduler=scheduler, scheduler_step_on="epoch"
    )
    with pytest.raises(UserError) as error:
        OptimizationLifecycle([torch.nn.Parameter(torch.ones(3))], training, phase_epochs=[5], phase_steps=[9])
    assert "set global_training.scheduler.total_steps" not in error.value.problem
    assert "change the epochs or its other arguments" in error.value.problem


@pytest.mark.parametrize(
    "scheduler, step_on, refused",
    [
        (
            {"name": "StepLR", "step_size": 1, "gamma": -1},
            "epoch",
            "makes the learning rate negative (-0.1) at epoch 2 of 4",
        ),
        ({"name": "CosineAnnealingLR", "eta_min": -0.5}, "batch", "makes the learning rate negative"),
        ({"name": "StepLR", "step_size": 1, "gamma": 0.5}, "epoch", None),
        ({"name": "CosineAnnealingLR"}, "batch", None),
        ({"name": "CosineAnnealingLR", "T_max": 2}, "epoch", None),  # 0 at epoch 3 of 4 only
    ],
    ids=[
        "step-negative-gamma",
        "cosine-negative-floor",
        "step-halving",
        "cosine-to-zero-at-the-end",
        "cosine-periodic",
    ],
)
def test_a_schedule_that_turns_the_learning_rate_negative_is_refused_before_training(
    scheduler, step_on, refused, caplog
):
    training = GlobalTrainingConfig(
        context_length=4, learning_rate=0.1, optimizer={"name": "AdamW"}, scheduler=scheduler, scheduler_step_on=step_on
    )
    parameters = [torch.nn.Parameter(torch.ones(3))]
    if refused is None:
        with caplog.at_level("WARNING", logger="sequifier"):
            OptimizationLifecycle(parameters, training, phase_epochs=[4], phase_steps=[6])
        assert "learning rate at 0" not in caplog.text
        return
    with pytest.raises(UserError, match=rf"{scheduler['name']} {re.escape(refused)}") as error:
        OptimizationLifecycle(parameters, training, phase_epochs=[4], phase_steps=[6])
    assert error.value.where == "global_training.scheduler"


@pytest.mark.parametrize(
    "scheduler, refused",
    [
        ({"name": "OneCycleLR", "max_lr": -1.0}, "makes the learning rate negative (-4e-06) at epoch 1 of 1"),
        ({"name": "OneCycleLR", "max_lr": float("nan")}, "makes the learning rate non-finite (nan) at epoch 1 of 1"),
        ({"name": "StepLR", "step_size": 1, "gamma": float("inf")}, "non-finite (inf) at epoch 2 of 2"),
    ],
    ids=["first-rate-negative", "first-rate-nan", "later-rate-infinite"],
)
def test_a_schedule_whose_rate_is_negative_or_not_finite_from_its_first_epoch_is_refused(scheduler, refused):
    training = GlobalTrainingConfig(
        context_length=4, learning_rate=0.1, optimizer={"name": "AdamW"}, scheduler=scheduler, scheduler_step_on="epoch"
    )
    epochs = 1 if scheduler["name"] == "OneCycleLR" else 2
    with pytest.raises(UserError, match=re.escape(refused)):
        OptimizationLifecycle([torch.nn.Parameter(torch.ones(3))], training, phase_epochs=[epochs], phase_steps=[6])


@pytest.mark.parametrize(
    "reset, phase_epochs, warned",
    [(True, [3], "epoch 2 of 3"), (True, [1, 2], "epoch 2 of 2"), (False, [2], "epoch 2 of 2")],
    ids=["before-the-end", "last-epoch-of-a-phase", "last-epoch-of-the-run"],
)
def test_a_schedule_that_stays_at_zero_to_its_end_is_warned_about(reset, phase_epochs, warned, caplog):
    training = GlobalTrainingConfig(
        context_length=4,
        learning_rate=0.1,
        optimizer={"name": "AdamW"},
        scheduler={"name": "ExponentialLR", "gamma": 0.0},
        scheduler_step_on="epoch",
        reset_optimization_on_phase=reset,
    )
    parameters = [torch.nn.Parameter(torch.ones(3))]
    with caplog.at_level("WARNING", logger="sequifier"):
        OptimizationLifecycle(parameters, training, phase_epochs=phase_epochs, phase_steps=[3] * len(phase_epochs))
    assert f"ExponentialLR keeps the learning rate at 0 from {warned} on" in caplog.text
