"""A killed and resumed run ends with the curves, summary values and TensorBoard events of an uninterrupted run."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_train_config, write_yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sequifier.training.history import read_history
from sequifier.training.tensorboard import FOLDER, tag

HELPER = Path(__file__).with_name("interrupted_train.py")


def config() -> dict:
    config = tiny_train_config(training_plan={"epochs": 3})
    config["global_training"].update(save_interval_batches=5, tensorboard=True)
    return config


def event_scalars(logs: Path) -> dict[str, list[tuple[int, float]]]:
    (run_folder,) = (logs / FOLDER).iterdir()
    events = EventAccumulator(str(run_folder))
    events.Reload()
    return {t: [(e.step, e.value) for e in events.Scalars(t)] for t in events.Tags()["scalars"]}


def csv_scalars(logs: Path) -> dict[str, list[tuple[int, float]]]:
    scalars: dict[str, list[tuple[int, float]]] = {}
    for split in ("training", "validation"):
        with (logs / f"{split}-metrics.csv").open(newline="") as handle:
            for row in csv.DictReader(handle):
                scalars.setdefault(tag(split, row), []).append(
                    (int(row["global_step"]), float(np.float32(row["value"])))
                )
    return scalars


@pytest.mark.slow
def test_a_resumed_run_draws_and_logs_what_an_uninterrupted_run_does(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", config())
    killed = reference_project.parent / "killed"
    shutil.copytree(reference_project, killed)
    whole = subprocess.run([sys.executable, "-m", "sequifier", "train"], cwd=reference_project, capture_output=True)
    assert whole.returncode == 0, whole.stderr[-2000:]
    stopped = subprocess.run([sys.executable, str(HELPER), "kill-after-batch", "47"], cwd=killed, capture_output=True)
    assert stopped.returncode == -9, stopped.stderr[-2000:]
    resumed = subprocess.run(
        [sys.executable, "-m", "sequifier", "train", "--quiet", "global_training.resume.policy=if_exists"],
        cwd=killed,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    logs, expected_logs = killed / "logs" / "tiny", reference_project / "logs" / "tiny"
    assert read_history(logs).values == read_history(expected_logs).values
    assert (logs / "curves.png").is_file()
    assert event_scalars(logs) == csv_scalars(logs)
    summary = resumed.stdout[resumed.stdout.index("run summary") :]
    expected = whole.stdout.decode()
    for line in summary.splitlines()[2:5]:  # the per-target rows
        assert line in expected
