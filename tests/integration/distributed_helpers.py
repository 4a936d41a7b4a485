"""Helpers of the distributed and Slurm tests (no tests here): the tiny pt-shard run, its checkpoint and metrics."""

from __future__ import annotations

import csv
from pathlib import Path

import torch
from conftest import run_sequifier, tiny_train_config


def pt_config(**training) -> dict:
    config = tiny_train_config(model_name="dist")
    config["global_training"].update({"read_format": "pt", **training})
    config["model"]["backbone"]["architecture"]["dropout"] = 0.0
    config["dataset"]["part"]["metadata_config_path"] = "configs/metadata_configs/events_pt.json"
    config["training_plan"] = {"epochs": 3}
    return config


def distributed(world_size: int, **training) -> dict:
    return pt_config(distributed=True, world_size=world_size, backend="gloo", **training)


def trained(folder: Path, *overrides: str) -> Path:
    result = run_sequifier(["train", *overrides], folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def latest(folder: Path) -> dict:
    return torch.load(folder / "checkpoints" / "dist" / "latest.pt", weights_only=True)


def metric_rows(folder: Path, name: str) -> list[dict]:
    with open(folder / "logs" / "dist" / name) as file:
        return list(csv.DictReader(file))
