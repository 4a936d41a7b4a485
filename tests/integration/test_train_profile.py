"""`sequifier train --profile`: profile.json and the printed table cover the run; without the flag, neither appears."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest
from conftest import run_sequifier, tiny_train_config, write_yaml
from run_helpers import train_here

PHASES = [
    "start-up",
    "config",
    "data loading",
    "model build",
    "training steps",
    "validation",
    "checkpointing",
    "records",
    "export",
    "other",
]


def last_global_step(logs: Path) -> int:
    with (logs / "training-metrics.csv").open() as metrics:
        return max(int(row["global_step"]) for row in csv.DictReader(metrics))


def test_profile_splits_the_whole_run_into_phases_and_step_parts(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(training_plan={"epochs": 2}))
    started = time.perf_counter()
    result = run_sequifier(["train", "--profile"], reference_project)
    wall = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    assert "\nprofile: " in result.stdout
    profile = json.loads((reference_project / "logs" / "tiny" / "profile.json").read_text())

    phases = {phase["name"]: phase for phase in profile["phases"]}
    assert list(phases) == PHASES
    assert profile["measured_from"] == "process start"
    assert sum(phase["seconds"] for phase in phases.values()) == pytest.approx(profile["total_seconds"])
    assert wall / 2 < profile["total_seconds"] < wall
    assert all(phases[name]["seconds"] > 0 for name in PHASES[:-1])
    assert phases["other"]["seconds"] > -0.05  # start-up is read from /proc in 10 ms ticks
    assert all(phase["rss_mib_at_end"] <= profile["peak_rss_mib"] for phase in profile["phases"][:-1])

    parts = {part["name"]: part for part in profile["step_parts"]}
    steps = last_global_step(reference_project / "logs" / "tiny")
    assert steps > 2
    assert [parts[name]["count"] for name in ("data gathering", "forward+loss", "backward", "optimizer")] == [steps] * 4
    for part in parts.values():
        assert part["seconds"] > 0
        assert part["mean_ms"] == pytest.approx(1000 * part["seconds"] / part["count"])
    assert sum(part["seconds"] for part in parts.values()) < phases["training steps"]["seconds"]


def test_without_the_flag_nothing_is_reported(reference_project: Path, monkeypatch, capsys):
    monkeypatch.setenv("SEQUIFIER_PROFILE", "0")  # restored (unset) after the test
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    train_here(reference_project, monkeypatch)
    assert (reference_project / "logs" / "tiny" / "training-metrics.csv").is_file()
    assert not (reference_project / "logs" / "tiny" / "profile.json").exists()
    assert "\nprofile: " not in capsys.readouterr().out
