"""Epoch checkpoints: the run's full training state, written atomically under checkpoints/<model>/."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch

from sequifier.atomic import atomic_path

CHECKPOINT_VERSION = 1
LATEST = "latest.pt"


def save_checkpoint(directory: Path, epoch: int, state: dict[str, Any]) -> Path:
    """Write `epoch-<epoch>.pt` and refresh `latest.pt`; both readable with torch.load(weights_only=True)."""
    path = directory / f"epoch-{epoch}.pt"
    with atomic_path(path) as temporary:
        torch.save({"version": CHECKPOINT_VERSION, "epoch": epoch, **state}, temporary)
    with atomic_path(directory / LATEST) as temporary:
        shutil.copyfile(path, temporary)
    return path
