"""Defaults that follow sequifier 3.x: Adam with torch's defaults, StepLR(1, 0.99), a checkpoint every epoch."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config, compose_config
from sequifier.training.optimization import OptimizationLifecycle


def training_config(**global_training):
    config = tiny_train_config()
    config["global_training"].update(global_training)
    return canonical_config(config).global_training


def lifecycle(training) -> OptimizationLifecycle:
    return OptimizationLifecycle([torch.nn.Parameter(torch.ones(3))], training, phase_epochs=[3], phase_steps=[3])


def test_an_omitted_optimizer_is_adam_with_torchs_defaults():
    cycle = lifecycle(training_config())
    cycle.begin_phase(0)
    assert type(cycle.optimizer) is torch.optim.Adam
    signature = inspect.signature(torch.optim.Adam).parameters
    torch_defaults = {name: p.default for name, p in signature.items() if name in cycle.optimizer.defaults}
    torch_defaults["lr"] = 0.003  # the tiny config's global_training.learning_rate
    assert cycle.optimizer.defaults == torch_defaults


def test_an_omitted_scheduler_multiplies_the_learning_rate_by_0_99_every_epoch():
    cycle = lifecycle(training_config())
    cycle.begin_phase(0)
    rates = []
    for _ in range(3):
        for _ in range(2):
            cycle.parameters[0].grad = torch.ones(3)
            cycle.step()
        rates.append(cycle.learning_rate)
        cycle.end_epoch()
    assert rates == pytest.approx([0.003, 0.003 * 0.99, 0.003 * 0.99**2])


def test_a_null_scheduler_keeps_the_learning_rate():
    cycle = lifecycle(training_config(scheduler=None))
    cycle.begin_phase(0)
    cycle.end_epoch()
    assert cycle.scheduler is None and cycle.learning_rate == 0.003


def test_a_checkpoint_is_written_every_epoch_unless_disabled():
    assert training_config().save_interval_epochs == 1
    assert training_config(save_interval_epochs=None).save_interval_epochs is None


def test_a_files_scheduler_replaces_the_default_instead_of_merging_into_it(tmp_path: Path):
    config = tiny_train_config()
    config["global_training"]["scheduler"] = {"name": "ExponentialLR", "gamma": 0.5}
    training = canonical_config(compose_config(write_yaml(tmp_path / "train.yaml", config), [])).global_training
    assert training.scheduler == {"name": "ExponentialLR", "gamma": 0.5}
    assert training.optimizer == {"name": "Adam"}
