"""Epoch checkpoints: epoch-N.pt and latest.pt are written whole, and a failed save leaves the earlier ones alone."""

from __future__ import annotations

import pytest
import torch

import sequifier.training.checkpoint as checkpoint_module
from sequifier.training.checkpoint import LATEST, save_checkpoint


def test_a_checkpoint_refreshes_latest(tmp_path):
    save_checkpoint(tmp_path, 1, {"weights": torch.ones(3)})
    path = save_checkpoint(tmp_path, 2, {"weights": torch.full((3,), 2.0)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-1.pt", "epoch-2.pt", LATEST]
    latest = torch.load(tmp_path / LATEST, weights_only=True)
    assert latest["epoch"] == 2 and torch.equal(latest["weights"], torch.full((3,), 2.0))
    assert path.read_bytes() == (tmp_path / LATEST).read_bytes()


def test_a_failed_save_keeps_the_earlier_checkpoints_and_leaves_no_temp(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, 1, {"weights": torch.ones(3)})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def torn_save(payload, path):
        path.write_bytes(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint_module.torch, "save", torn_save)
    with pytest.raises(OSError):
        save_checkpoint(tmp_path, 1, {"weights": torch.zeros(3)})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
