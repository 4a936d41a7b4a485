"""A target with loss weight 0.0 takes no part in backward but is still measured."""

from __future__ import annotations

import csv
from pathlib import Path

import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.training.engine import Trainer


def test_zero_weight_target_gets_no_gradient_and_stays_in_metrics(reference_project: Path, tmp_path: Path):
    config = tiny_train_config()
    config["dataset"]["loss_weights"] = {"event": 1.0, "amount": 0.0}
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    trainer = Trainer(spec)
    head = trainer.network.interfaces["default"].decoder.heads["amount"]
    before = head.weight.detach().clone()
    event_before = trainer.network.interfaces["default"].decoder.heads["event"].weight.detach().clone()
    trainer.run()
    assert head.weight.grad is None
    assert torch.equal(head.weight, before)
    assert not torch.equal(trainer.network.interfaces["default"].decoder.heads["event"].weight, event_before)
    rows = list(csv.DictReader((reference_project / "logs" / "tiny" / "training-metrics.csv").open()))
    assert any(r["target"] == "amount" and r["metric"] == "loss" for r in rows)
    validation = list(csv.DictReader((reference_project / "logs" / "tiny" / "validation-metrics.csv").open()))
    amount = [float(r["value"]) for r in validation if r["target"] == "amount" and r["metric"] == "loss"]
    event = [float(r["value"]) for r in validation if r["target"] == "event" and r["metric"] == "loss"]
    aggregate = [float(r["value"]) for r in validation if r["target"] == "aggregate" and r["metric"] == "loss"]
    assert amount and aggregate[0] == event[0]
