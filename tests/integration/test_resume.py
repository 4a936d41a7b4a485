"""Exact resume: a run killed (or stopped) anywhere and resumed ends bit-identical to an uninterrupted run."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REFERENCE_DIR, tiny_train_config, write_yaml
from run_helpers import train_here

from sequifier.data.stored import load_split
from sequifier.infer.onnx_model import OnnxModel
from sequifier.infer.windows import model_inputs

HELPER = Path(__file__).with_name("interrupted_train.py")
RESUME = "global_training.resume.policy=if_exists"


def two_phase_config(reset: bool) -> dict:
    config = tiny_train_config()
    config["global_training"].update(
        batch_size=64, accumulation_steps=3, save_interval_batches=5, reset_optimization_on_phase=reset
    )
    config["model"]["interfaces"] = {"default": config["model"].pop("interface")}
    dataset = config.pop("dataset")
    part = dataset["part"]
    config["dataset_training"] = {"default": {"parts": {"p1": part, "p2": part}, "criterion": dataset["criterion"]}}
    config["training_plan"] = {
        "phases": [
            {
                "name": "mixed",
                "epochs": 2,
                "mode": "interleaved",
                "selection": "weighted_random",
                "sources": [
                    {"source": "default.p1", "weight": 2.0, "batches_per_selection": 2},
                    {"source": "default.p2", "weight": 1.0},
                ],
            },
            {"name": "all", "epochs": 1, "sources": [{"source": "default"}]},
        ]
    }
    config["evaluation"] = {"sources": [{"source": "default.p1"}]}
    return config


def project_copy(reference_project: Path, name: str, config: dict) -> Path:
    project = reference_project.parent / name
    shutil.copytree(reference_project, project)
    write_yaml(project / "configs" / "train.yaml", config)
    return project


def interrupted(project: Path, mode: str, n: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HELPER), mode, str(n)], cwd=project, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def outcome(project: Path) -> tuple[dict, np.ndarray, dict[str, list[dict]]]:
    """Final weights, the last ONNX model's outputs on validation windows, and every metric row but its run id."""
    weights = torch.load(project / "checkpoints" / "tiny" / "latest.pt", weights_only=True)["model_state_dict"]
    model = OnnxModel(project / "models" / "tiny-last-3.onnx")
    stored = load_split(
        project / "data" / "events-split1.parquet", list(model.contract["input_columns"]), {"event", "channel"}
    )
    inputs, padding = model_inputs(stored.columns, stored.left_pad_lengths, model.contract)
    predictions = model(inputs, padding)["event"]
    rows = {}
    for name in ("training-metrics.csv", "validation-metrics.csv"):
        table = list(csv.DictReader((project / "logs" / "tiny" / name).open()))
        assert len({row.pop("run_id") for row in table}) == 1
        rows[name] = table
    return weights, predictions, rows


def assert_identical(resumed: Path, reference: Path) -> None:
    weights, predictions, rows = outcome(resumed)
    expected_weights, expected_predictions, expected_rows = outcome(reference)
    assert weights.keys() == expected_weights.keys()
    assert all(torch.equal(weights[k], expected_weights[k]) for k in weights)
    np.testing.assert_array_equal(predictions, expected_predictions)
    assert rows == expected_rows


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[bool, Path]:
    runs = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for reset in (True, False):
            project = tmp_path_factory.mktemp("uninterrupted") / f"reset-{reset}"
            shutil.copytree(REFERENCE_DIR, project)
            write_yaml(project / "configs" / "train.yaml", two_phase_config(reset))
            train_here(project, monkeypatch)
            runs[reset] = project
    return runs


@pytest.mark.parametrize(
    ("reset", "mode", "n"),
    [
        pytest.param(True, "kill-after-batch", 7, id="kill-9-mid-epoch-after-a-batch-snapshot"),
        pytest.param(
            False, "kill-after-batch", 7, id="kill-9-mid-epoch-continuous-optimization", marks=pytest.mark.slow
        ),
        pytest.param(True, "kill-after-batch", 23, id="kill-9-inside-the-second-phase", marks=pytest.mark.slow),
        pytest.param(True, "kill-in-checkpoint", 3, id="kill-9-while-writing-a-checkpoint", marks=pytest.mark.slow),
    ],
)
def test_a_killed_run_resumes_bit_identical(reference_project, uninterrupted, monkeypatch, reset, mode, n):
    project = project_copy(reference_project, "killed", two_phase_config(reset))
    killed = interrupted(project, mode, n)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not (project / "models").exists() or not any((project / "models").iterdir())
    train_here(project, monkeypatch, RESUME)
    assert_identical(project, uninterrupted[reset])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sigterm-after-batch", "sigint-after-batch"])
def test_sigterm_or_ctrl_c_writes_latest_exits_75_and_resumes_exactly(
    reference_project, uninterrupted, monkeypatch, mode
):
    project = project_copy(reference_project, "stopped", two_phase_config(True))
    stopped = interrupted(project, mode, 11)
    assert stopped.returncode == 75, stopped.stderr[-2000:]
    assert "stopped on request" in stopped.stderr and "Traceback" not in stopped.stderr
    progress = torch.load(project / "checkpoints" / "tiny" / "latest.pt", weights_only=True)["progress"]
    # the batch-10 snapshot flushed its window; the window of batches 11-13 is finished before stopping
    assert (progress["global_batch"], progress["batches_done"]) == (13, 3)  # 10 batches per epoch
    train_here(project, monkeypatch, RESUME)
    assert_identical(project, uninterrupted[True])


@pytest.mark.slow
def test_a_second_sigterm_stops_at_once(reference_project):
    project = project_copy(reference_project, "twice", two_phase_config(True))
    stopped = interrupted(project, "sigterm-twice", 8)
    assert stopped.returncode == -15
    assert "SIGTERM: stopping after the current optimizer step" in stopped.stderr, stopped.stderr[-2000:]
    progress = torch.load(project / "checkpoints" / "tiny" / "latest.pt", weights_only=True)["progress"]
    assert progress["global_batch"] == 5  # the last batch snapshot; no stop checkpoint was written


def metric_rows(project: Path, model: str, name: str) -> list[dict]:
    return list(csv.DictReader((project / "logs" / model / name).open()))


def without_run_id(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "run_id"} for row in rows]


@pytest.mark.slow
def test_a_run_resumed_under_another_name_carries_its_rows_over_and_keeps_the_new_names_rows(
    reference_project, uninterrupted, monkeypatch
):
    """model_name may change on resume: the new name's files get the run's rows up to the checkpoint after their
    own (an earlier run of that name), and resuming the same way twice gives the same files."""
    project = project_copy(reference_project, "renamed", two_phase_config(True))
    stopped = interrupted(project, "sigint-after-batch", 11)
    assert stopped.returncode == 75, stopped.stderr[-2000:]
    files = ("training-metrics.csv", "validation-metrics.csv")
    stopped_files = {name: (project / "logs" / "tiny" / name).read_bytes() for name in files}
    train_here(project, monkeypatch, "--model-name", "other")
    own = {name: metric_rows(project, "other", name) for name in files}
    from_tiny = ["--model-name", "other", RESUME, "global_training.resume.checkpoint_path=checkpoints/tiny/latest.pt"]
    for _ in range(2):
        train_here(project, monkeypatch, *from_tiny)
        for name in files:
            rows = metric_rows(project, "other", name)
            assert rows[: len(own[name])] == own[name]
            assert without_run_id(rows[len(own[name]) :]) == without_run_id(
                metric_rows(uninterrupted[True], "tiny", name)
            )
    assert {name: (project / "logs" / "tiny" / name).read_bytes() for name in files} == stopped_files


def test_a_resume_from_an_older_snapshot_killed_before_its_first_checkpoint_loses_no_row(
    reference_project, uninterrupted, monkeypatch
):
    """The rows a resume from an older snapshot cuts are latest.pt's until the resume's own checkpoint replaces it:
    killed before then, the next run puts them back; finished, it leaves no copy of them."""
    project = reference_project.parent / "older-snapshot"
    shutil.copytree(uninterrupted[True], project)
    logs = project / "logs" / "tiny"
    files = ("training-metrics.csv", "validation-metrics.csv")
    finished = {name: (logs / name).read_bytes() for name in files}
    older = [
        "global_training.resume.policy=required",
        "global_training.resume.checkpoint_path=checkpoints/tiny/batch-15.pt",
    ]
    killed = subprocess.run([sys.executable, str(HELPER), "kill-after-batch", "17", *older], cwd=project,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert (logs / files[0]).stat().st_size < len(finished[files[0]])  # cut back to the snapshot's rows
    train_here(project, monkeypatch, RESUME)  # the finished run's latest.pt: nothing is left to train
    assert {name: (logs / name).read_bytes() for name in files} == finished
    assert "rows of the run are missing" not in (logs / "tiny.log").read_text()
    train_here(project, monkeypatch, *older)
    assert {name: (logs / name).read_bytes() for name in files} == finished  # the resume is exact
    assert list(logs.glob(".*uncut*")) == []


def test_a_fresh_start_beside_a_snapshot_without_latest_names_the_snapshot(reference_project, monkeypatch, capsys):
    """A latest.pt whose write failed (a full disk) leaves the epoch's snapshot: the run that cannot resume says so."""
    project = project_copy(reference_project, "lost-latest", tiny_train_config())
    train_here(project, monkeypatch)
    (project / "checkpoints" / "tiny" / "latest.pt").unlink()
    capsys.readouterr()
    train_here(project, monkeypatch, RESUME)
    note = (
        f"note: {project / 'checkpoints' / 'tiny'} holds no latest.pt (its write may have failed) but holds epoch-1.pt"
    )
    out = capsys.readouterr().out
    assert note in out and "global_training.resume.checkpoint_path=checkpoints/tiny/epoch-1.pt" in out


@pytest.mark.parametrize("mode", ["sigterm-ending-epoch", "sigterm-in-export"])
def test_a_stop_requested_after_the_last_step_lets_the_export_finish(reference_project, mode):
    """Nothing would be left to resume: the run exports its models and ends as finished, saying why."""
    config = tiny_train_config()
    project = project_copy(reference_project, f"late-{mode}", config)
    finished = interrupted(project, mode, config["training_plan"]["epochs"])
    assert finished.returncode == 0, finished.stderr[-2000:]
    last = config["training_plan"]["epochs"]
    assert (project / "models" / f"tiny-last-{last}.onnx").is_file()
    said = finished.stdout + finished.stderr
    if mode == "sigterm-ending-epoch":
        assert "SIGTERM came after the last training step: the run exports its models instead of stopping" in said
    else:
        assert (
            "SIGTERM: training is complete; finishing the last validation and the export of its models; a second "
            "signal stops at once, without it"
        ) in finished.stderr
    assert "stopped on" not in said


def test_a_misspelt_checkpoint_path_starts_fresh_with_a_note(reference_project, monkeypatch, capsys):
    project = project_copy(reference_project, "misspelt-checkpoint", tiny_train_config())
    capsys.readouterr()
    train_here(project, monkeypatch, RESUME, "global_training.resume.checkpoint_path=checkpoints/tiny/latst.pt")
    assert (
        f"note: global_training.resume.checkpoint_path {project / 'checkpoints' / 'tiny' / 'latst.pt'} does not "
        "exist: this run starts fresh (policy if_exists; policy=required refuses a checkpoint that is not there)"
    ) in capsys.readouterr().out


def test_resuming_a_finished_run_says_its_plan_is_complete(reference_project, monkeypatch):
    project = project_copy(reference_project, "finished", tiny_train_config())
    train_here(project, monkeypatch)
    train_here(project, monkeypatch, RESUME)
    log = (project / "logs" / "tiny" / "tiny.log").read_text()
    resumed = [line for line in log.splitlines() if "resuming tiny from" in line]
    assert len(resumed) == 1 and "its training plan is complete (" in resumed[0], log[-2000:]
    assert "nothing is left to train" in resumed[0] and "phase" not in resumed[0]
