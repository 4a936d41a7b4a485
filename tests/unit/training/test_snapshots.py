"""Each checkpoint interval field writes the files the guide says, read from a controllable clock (no sleeps)."""

from __future__ import annotations

import csv
from pathlib import Path

import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.training.engine import Trainer
from sequifier.training.snapshots import LATEST_ONLY, PERSISTENT, SnapshotSchedule


class Clock:
    """Minutes pass only when a batch asks the time: each call is one more minute."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 60.0
        return self.now


def run(reference_project: Path, tmp_path: Path, clock=None, **training) -> list[str]:
    config = tiny_train_config(training_plan={"epochs": 2})
    config["global_training"].update({"batch_size": 64, "save_interval_epochs": None, **training})
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    Trainer(spec, clock=clock or Clock()).run()
    folder = reference_project / "checkpoints" / "tiny"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def validation_steps(reference_project: Path) -> list[tuple[str, str]]:
    rows = csv.DictReader((reference_project / "logs" / "tiny" / "validation-metrics.csv").open())
    return sorted({(r["epoch"], r["global_step"]) for r in rows if r["target"] == "aggregate"})


def test_the_schedule_decides_from_batches_and_minutes():
    training = canonical_config(tiny_train_config()).global_training
    from dataclasses import replace

    clock = Clock()
    batches = SnapshotSchedule(replace(training, save_interval_batches=3), clock)
    assert [batches.after_batch(n) for n in range(1, 7)] == [None, None, PERSISTENT, None, None, PERSISTENT]
    minutes = SnapshotSchedule(replace(training, save_interval_minutes=2.5), clock)
    assert [minutes.after_batch(n) for n in range(1, 7)] == [None, None, PERSISTENT, None, None, PERSISTENT]
    latest = SnapshotSchedule(replace(training, save_latest_interval_minutes=2), clock)
    assert [latest.after_batch(n) for n in range(1, 5)] == [None, LATEST_ONLY, None, LATEST_ONLY]
    epochs = SnapshotSchedule(replace(training, save_interval_epochs=2), clock)
    assert [epochs.after_epoch(e) for e in range(1, 5)] == [False, True, False, True]


def test_epoch_snapshots(reference_project: Path, tmp_path: Path):
    assert run(reference_project, tmp_path, save_interval_epochs=1) == ["epoch-1.pt", "epoch-2.pt", "latest.pt"]


def test_batch_snapshots_validate_when_asked(reference_project: Path, tmp_path: Path, caplog):
    # 310 training windows in batches of 64: 5 batches per epoch, 10 in the run
    with caplog.at_level("INFO", logger="sequifier"):
        files = run(reference_project, tmp_path, save_interval_batches=4, save_interval_val_loss=True)
    assert files == ["batch-4.pt", "batch-8.pt", "latest.pt"]
    assert validation_steps(reference_project) == [("1", "4"), ("1", "5"), ("2", "10"), ("2", "8")]
    said = [
        r.getMessage().split(" validation loss")[0] for r in caplog.records if " validation loss " in r.getMessage()
    ]
    # a snapshot's validation within an epoch is not taken for the epoch's own
    assert said == ["epoch 1, snapshot at batch 4", "epoch 1", "epoch 2, snapshot at batch 8", "epoch 2"]
    latest = torch.load(reference_project / "checkpoints" / "tiny" / "latest.pt", weights_only=True)
    assert latest["progress"]["global_batch"] == 8


def test_a_batch_snapshot_at_an_epochs_end_validates_once(reference_project: Path, tmp_path: Path):
    files = run(reference_project, tmp_path, save_interval_batches=5, save_interval_val_loss=True)
    assert files == ["batch-10.pt", "batch-5.pt", "latest.pt"]
    rows = list(csv.DictReader((reference_project / "logs" / "tiny" / "validation-metrics.csv").open()))
    aggregate = [(r["epoch"], r["global_step"]) for r in rows if (r["target"], r["metric"]) == ("aggregate", "loss")]
    assert aggregate == [("1", "5"), ("2", "10")]


def test_batch_snapshots_without_validation(reference_project: Path, tmp_path: Path):
    assert run(reference_project, tmp_path, save_interval_batches=4, save_interval_val_loss=False)[0] == "batch-4.pt"
    assert validation_steps(reference_project) == [("1", "5"), ("2", "10")]


def test_minute_snapshots(reference_project: Path, tmp_path: Path):
    # the clock moves one minute per batch: every third batch is three minutes after the last snapshot
    assert run(reference_project, tmp_path, save_interval_minutes=3) == [
        "batch-3.pt",
        "batch-6.pt",
        "batch-9.pt",
        "latest.pt",
    ]


def test_latest_only_refreshes_latest(reference_project: Path, tmp_path: Path):
    assert run(reference_project, tmp_path, save_latest_interval_minutes=4) == ["latest.pt"]
    latest = torch.load(reference_project / "checkpoints" / "tiny" / "latest.pt", weights_only=True)
    assert latest["progress"]["global_batch"] == 8
