"""Epoch checkpoints: the run's full training state, written atomically under checkpoints/<model>/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch

CHECKPOINT_VERSION = 1
LATEST = "latest.pt"


def save_checkpoint(directory: Path, epoch: int, state: dict[str, Any]) -> Path:
    """Write `epoch-<epoch>.pt` and refresh `latest.pt`; both readable with torch.load(weights_only=True)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"epoch-{epoch}.pt"
    temporary = directory / f".{path.name}.tmp"
    torch.save({"version": CHECKPOINT_VERSION, "epoch": epoch, **state}, temporary)
    os.replace(temporary, path)
    latest_temporary = directory / f".{LATEST}.tmp"
    shutil.copyfile(path, latest_temporary)
    os.replace(latest_temporary, directory / LATEST)
    return path
