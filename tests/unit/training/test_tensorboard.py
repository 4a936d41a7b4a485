"""TensorBoard events mirror the metric CSVs, also after a resume cut the CSVs back (events are rebuilt from them).

TensorBoard stores scalars as float32, so CSV values are compared as float32.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sequifier.config.errors import UserError
from sequifier.training.metrics import MetricsFile
from sequifier.training.tensorboard import FOLDER, mirrored, tag


def open_files(folder: Path, run_id: str, keep: dict[str, int] | None = None):
    keep = keep or {}
    files = tuple(
        MetricsFile(folder / name, run_id, keep.get(name))
        for name in ("training-metrics.csv", "validation-metrics.csv")
    )
    return mirrored(files, run_id)


def write_epoch(files, epoch: int) -> None:
    common = dict(phase="p", dataset="d", epoch=epoch, global_step=5 * epoch, learning_rate=0.01)
    files[0].write(**common, part="x", target="event", metric="loss", value=1.0 / epoch)
    files[1].write(**common, part="", target="aggregate", metric="loss", value=2.0 / epoch)
    files[1].write(**common, part="", target="aggregate", metric="baseline_loss", value=3.0)


def csv_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    scalars: dict[str, list[tuple[int, float]]] = {}
    for split in ("training", "validation"):
        with (folder / f"{split}-metrics.csv").open(newline="") as handle:
            for row in csv.DictReader(handle):
                scalars.setdefault(tag(split, row), []).append(
                    (int(row["global_step"]), float(np.float32(row["value"])))
                )
    return scalars


def event_scalars(folder: Path, run_id: str) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(folder / FOLDER / run_id))
    events.Reload()
    return {t: [(e.step, e.value) for e in events.Scalars(t)] for t in events.Tags()["scalars"]}


def test_events_hold_the_values_of_the_csv_rows(tmp_path: Path):
    files = open_files(tmp_path, "run")
    for epoch in (1, 2, 3):
        write_epoch(files, epoch)
    for f in files:
        f.close()
    assert event_scalars(tmp_path, "run") == csv_scalars(tmp_path)
    assert set(csv_scalars(tmp_path)) == {
        "training/x/event/loss",
        "validation/aggregate/loss",
        "validation/aggregate/baseline_loss",
    }


def test_a_resumed_run_ends_with_events_equal_to_its_cut_back_csv(tmp_path: Path):
    files = open_files(tmp_path, "run")
    write_epoch(files, 1)
    kept = {name: f.size() for name, f in zip(("training-metrics.csv", "validation-metrics.csv"), files)}
    write_epoch(files, 2)  # written after the checkpoint, then the process dies
    for f in files:
        f.close()
    resumed = open_files(tmp_path, "run", kept)
    write_epoch(resumed, 2)
    for f in resumed:
        f.close()
    events = event_scalars(tmp_path, "run")
    assert events == csv_scalars(tmp_path)
    assert [step for step, _ in events["validation/aggregate/loss"]] == [5, 10]


def test_without_tensorboard_installed_the_error_names_the_field_and_the_extra(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(UserError) as raised:
        open_files(tmp_path, "run")
    assert raised.value.where == "global_training.tensorboard"
    assert "sequifier[tensorboard]" in raised.value.problem
