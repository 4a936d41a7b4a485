"""Data loading options change speed, never results: num_workers and num_threads; exact resume with workers."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config
from run_helpers import project_with, train_here

from sequifier import cli
from sequifier.training.engine import Trainer

HELPER = Path(__file__).with_name("interrupted_train.py")
original_run = Trainer._run


def two_part_config() -> dict:
    config = tiny_train_config()
    config["global_training"].update(batch_size=32, accumulation_steps=2, save_interval_batches=4)
    config["model"]["interfaces"] = {"default": config["model"].pop("interface")}
    dataset = config.pop("dataset")
    part = dataset["part"]
    config["dataset_training"] = {
        "default": {"parts": {"p1": part, "p2": part}, "criterion": dataset["criterion"]},
    }
    config["training_plan"] = {
        "phases": [
            {
                "name": "mixed",
                "epochs": 2,
                "mode": "interleaved",
                "sources": [{"source": "default.p1", "batches_per_selection": 3}, {"source": "default.p2"}],
            }
        ]
    }
    config["evaluation"] = {"sources": [{"source": "default"}]}
    return config


def outcome(project: Path) -> tuple[dict, dict[str, list[dict]]]:
    """Final weights and every metric row but its run id."""
    weights = torch.load(project / "checkpoints" / "tiny" / "latest.pt", weights_only=True)["model_state_dict"]
    rows = {}
    for path in sorted((project / "logs" / "tiny").glob("*.csv")):
        table = list(csv.DictReader(path.open()))
        for row in table:
            row.pop("run_id")
        rows[path.name] = table
    return weights, rows


def assert_identical(project: Path, reference: Path) -> None:
    weights, rows = outcome(project)
    expected_weights, expected_rows = outcome(reference)
    assert weights.keys() == expected_weights.keys()
    assert all(torch.equal(weights[k], expected_weights[k]) for k in weights)
    assert rows == expected_rows


def test_worker_threads_train_bit_identically(tmp_path: Path, monkeypatch):
    serial = project_with(tmp_path, "serial", two_part_config())
    train_here(serial, monkeypatch)
    threaded = project_with(tmp_path, "threaded", two_part_config())
    train_here(threaded, monkeypatch, "global_training.num_workers=2")
    assert_identical(threaded, serial)


def test_num_threads_holds_for_the_run_and_is_logged(tmp_path: Path, monkeypatch):
    threads_before = torch.get_num_threads()
    seen = []
    monkeypatch.setattr(Trainer, "_run", lambda self: seen.append(torch.get_num_threads()) or original_run(self))
    project = project_with(tmp_path, "one-thread", two_part_config())
    train_here(project, monkeypatch, "global_training.num_threads=1")
    assert seen == [1]
    assert torch.get_num_threads() == threads_before
    log = (project / "logs" / "tiny" / "tiny.log").read_text()
    assert "torch intra-op threads: 1 (global_training.num_threads)" in log


@pytest.mark.slow
def test_a_run_with_workers_killed_mid_epoch_resumes_bit_identical(tmp_path: Path, monkeypatch):
    workers = "global_training.num_workers=2"
    uninterrupted = project_with(tmp_path, "uninterrupted", two_part_config())
    train_here(uninterrupted, monkeypatch, workers)
    killed = project_with(tmp_path, "killed", two_part_config())
    result = subprocess.run(
        [sys.executable, str(HELPER), "kill-after-batch", "14", workers],
        cwd=killed, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == -9, result.stderr[-2000:]
    train_here(killed, monkeypatch, workers, "global_training.resume.policy=if_exists")
    assert_identical(killed, uninterrupted)


def test_num_threads_below_one_is_refused_before_training(tmp_path: Path, monkeypatch, capsys):
    project = project_with(tmp_path, "zero-threads", two_part_config())
    with monkeypatch.context() as patch:
        patch.chdir(project)
        assert cli.main(["train", "global_training.num_threads=0"]) == 2
        assert "global_training.num_threads: must be positive, got 0" in capsys.readouterr().err
        assert cli.main(["train", "--cfg", "job", "global_training.num_threads=0"]) == 2
    assert "global_training.num_threads: must be positive, got 0" in capsys.readouterr().err
    assert not (project / "models").exists()


def test_default_gathers_in_the_loop_on_the_cpu(tmp_path: Path, monkeypatch):
    from sequifier.training import engine

    workers_used = []
    real_prefetched = engine.prefetched

    def recording(items, gather, workers):
        workers_used.append(workers)
        return real_prefetched(items, gather, workers)

    monkeypatch.setattr(engine, "prefetched", recording)
    train_here(project_with(tmp_path, "default", two_part_config()), monkeypatch)
    assert workers_used and set(workers_used) == {0}
