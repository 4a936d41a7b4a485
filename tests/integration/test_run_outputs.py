"""What a training run leaves besides models: the run summary, curves.png, TensorBoard events, sweep comparison."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
from conftest import run_sequifier, tiny_train_config, write_yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sequifier.training.tensorboard import FOLDER, tag

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def two_phase_config(**global_training) -> dict:
    config = tiny_train_config()
    config["global_training"].update(global_training)
    phase = {"sources": [{"source": "default"}]}
    config["training_plan"] = {
        "phases": [{"name": "warm", "epochs": 1, **phase}, {"name": "main", "epochs": 2, **phase}]
    }
    return config


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_run_prints_its_summary_draws_curves_and_mirrors_metrics_to_tensorboard(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", two_phase_config(tensorboard=True))
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 0, result.stderr
    assert not CONTROL.search(result.stderr), "a non-interactive run writes no control characters"
    logs = reference_project / "logs" / "tiny"
    validation = rows(logs / "validation-metrics.csv")
    event_losses = {
        int(r["epoch"]): float(r["value"]) for r in validation if r["target"] == "event" and r["metric"] == "loss"
    }
    best_epoch = min(event_losses, key=event_losses.get)
    summary = result.stdout[result.stdout.index("run summary: tiny") :]
    event_line = next(line.split() for line in summary.splitlines() if line.split()[1:2] == ["event"])
    assert event_line[2:5] == [f"{event_losses[best_epoch]:.4f}", str(best_epoch), f"{event_losses[3]:.4f}"]
    assert "samples/s" in summary and "wall time" in summary
    assert str(logs / "curves.png") in summary
    assert any(line.strip().startswith("model") and line.strip().endswith(".onnx") for line in summary.splitlines())
    assert (logs / "curves.png").read_bytes().startswith(PNG_MAGIC)

    (run_folder,) = (logs / FOLDER).iterdir()
    events = EventAccumulator(str(run_folder))
    events.Reload()
    from_events = {t: [(e.step, e.value) for e in events.Scalars(t)] for t in events.Tags()["scalars"]}
    from_csv: dict[str, list[tuple[int, float]]] = {}
    for split in ("training", "validation"):
        for row in rows(logs / f"{split}-metrics.csv"):
            from_csv.setdefault(tag(split, row), []).append((int(row["global_step"]), float(np.float32(row["value"]))))
    assert from_events == from_csv


def test_plot_redraws_curves_from_the_metric_files(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", two_phase_config())
    assert run_sequifier(["train", "--quiet"], reference_project).returncode == 0
    picture = reference_project / "logs" / "tiny" / "curves.png"
    picture.unlink()
    result = run_sequifier(["plot", "logs/tiny", "--floor", "event=1.5"], reference_project)
    assert result.returncode == 0, result.stderr
    assert picture.read_bytes().startswith(PNG_MAGIC)
    missing = run_sequifier(["plot", "logs"], reference_project)
    assert missing.returncode == 2 and "holds no metric files" in missing.stderr
    malformed = run_sequifier(["plot", "logs/tiny", "--floor", "event"], reference_project)
    assert malformed.returncode == 2 and "--floor" in malformed.stderr


def test_a_sweep_into_a_chosen_folder_reports_its_jobs_there_with_a_comparison_picture(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    result = run_sequifier(
        ["train", "-m", "global_training.learning_rate=1e-3,3e-3", "hydra.sweep.dir=chosen"], reference_project
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sweep = reference_project / "chosen"
    jobs = [json.loads(p.read_text()) for p in sweep.glob("*/result.json")]
    assert len(jobs) == 2
    summary = (sweep / "summary.txt").read_text()
    for job in jobs:
        assert f"{job['monitored_loss']:.4f}" in summary and f"{job['monitored_loss']:.4f}" in result.stdout
    assert {job["swept"] for job in jobs} == {
        "global_training.learning_rate=0.001",
        "global_training.learning_rate=0.003",
    }
    assert (sweep / "sweep.png").read_bytes().startswith(PNG_MAGIC)
    assert not (reference_project / "multirun").exists()


def test_the_runs_text_log_holds_the_config_and_start_up_warnings(reference_project: Path):
    config = tiny_train_config(training_plan={"epochs": 3})
    config["global_training"].update(
        scheduler={"name": "ExponentialLR", "gamma": 0.0}, resume={"policy": "never", "checkpoint_path": "x.pt"}
    )
    config["evaluation"] = {"sources": [{"source": "default"}], "monitor": {"source": "default", "mode": "max"}}
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 0, result.stderr
    log = (reference_project / "logs" / "tiny" / "tiny.log").read_text()
    config_warnings = ["global_training.resume.checkpoint_path: is not read", "evaluation.monitor.mode is max"]
    start_up_warning = "ExponentialLR keeps the learning rate at 0"
    for warning in [*config_warnings, start_up_warning]:
        assert warning in log and warning in result.stderr + result.stdout
    for warning in config_warnings:
        assert log.index(warning) < log.index("epoch 1")
        assert result.stderr.count(warning) == 1  # the file gets it, the console only once
