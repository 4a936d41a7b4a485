"""Accumulation windows cross part boundaries within a dataset, and flush at a dataset transition."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.data.datasets import view_shape
from sequifier.data.views import gather_batch
from sequifier.model.network import build_network
from sequifier.training.engine import Trainer


def two_dataset_config() -> dict:
    config = tiny_train_config(evaluation=False)
    config["global_training"].update(
        context_length=16, batch_size=128, accumulation_steps=4, learning_rate=0.1, optimizer={"name": "SGD"}
    )
    config["model"]["backbone"]["architecture"]["dropout"] = 0.0
    config["model"]["interfaces"] = {"default": config["model"].pop("interface")}
    dataset = config.pop("dataset")
    part = dataset["part"]
    config["dataset_training"] = {
        "a": {"parts": {"p1": part, "p2": part}, "criterion": dataset["criterion"]},
        "b": {"parts": {"only": part}, "criterion": dataset["criterion"]},
    }
    config["training_plan"] = {
        "phases": [{"name": "train", "epochs": 1, "sources": [{"source": "a"}, {"source": "b"}]}]
    }
    return config


def test_optimizer_updates_average_the_right_microbatches(reference_project: Path, tmp_path: Path):
    spec = resolve(canonical_config(two_dataset_config()), run_dir=tmp_path, cwd=reference_project)
    trainer = Trainer(spec)
    schedule = trainer._schedule(0, 1)
    assert [(b.dataset, b.part) for b in schedule] == [("a", "p1")] * 3 + [("a", "p2")] * 3 + [("b", "only")] * 3
    recorded = []
    original_step = trainer.optimization.step

    def recording_step(*args):
        state = {k: v.clone() for k, v in trainer.network.state_dict().items()}
        grads = {n: p.grad.clone() for n, p in trainer.network.named_parameters() if p.grad is not None}
        recorded.append((state, grads))
        original_step(*args)

    trainer.optimization.step = recording_step
    trainer.run()

    expected_windows = [schedule[0:4], schedule[4:6], schedule[6:9]]
    assert len(recorded) == len(expected_windows)
    reference = build_network(spec.network)
    for (state, grads), window in zip(recorded, expected_windows):
        reference.load_state_dict(state)
        reference.zero_grad()
        for planned in window:
            part = trainer.parts[(planned.dataset, planned.part)]
            chosen = trainer._batches(part, 0, 1)[planned.batch]
            interface = spec.config.model.interfaces[part.interface]
            batch = gather_batch(
                part.train.windows,
                part.train.window_index[chosen],
                part.train.end_slot[chosen],
                view_shape(spec, part.interface),
                interface.input_columns,
                interface.target_columns,
            )
            losses = trainer.losses[planned.dataset]
            sums = losses.sums(
                reference(part.interface, batch.inputs, batch.left_pad_lengths), batch.targets, batch.target_valid
            )
            (losses.aggregate({n: t / c for n, (t, c) in sums.items()}) / len(window)).backward()
        for name, parameter in reference.named_parameters():
            if name in grads:
                assert torch.allclose(parameter.grad, grads[name], atol=1e-6), name


def test_snapshots_inside_windows_add_updates_but_the_batch_stepped_schedule_keeps_the_plans_length(
    reference_project: Path, tmp_path: Path
):
    config = tiny_train_config(evaluation=False)
    config["global_training"].update(
        accumulation_steps=2,
        save_interval_batches=3,
        scheduler_step_on="batch",
        scheduler={"name": "OneCycleLR", "max_lr": 0.01, "pct_start": 0.2, "cycle_momentum": False},
    )
    config["training_plan"] = {"epochs": 2}
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    trainer = Trainer(spec)
    batches = len(trainer._schedule(0, 1))
    planned = trainer.optimization.durations[0]
    assert planned == 2 * ((batches + 1) // 2)
    trainer.run()  # stepping OneCycleLR past its total_steps would raise
    within_epoch = [(b - 1) % batches for b in range(3, 2 * batches + 1, 3)]  # the snapshots' batch indices
    inside_windows = sum(1 for i in within_epoch if i % 2 == 0 and i != batches - 1)
    assert inside_windows > 0
    assert trainer.progress.global_step == planned + inside_windows
    scheduler = trainer.optimization.scheduler
    assert scheduler.last_epoch == scheduler.total_steps == planned
