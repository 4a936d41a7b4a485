"""`sequifier train -m` runs each combination as its own job, with its own directory and model name."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import run_sequifier, tiny_train_config, write_yaml

from sequifier.training.history import read_history


def test_a_2x2_sweep_runs_four_jobs_with_distinct_directories_names_and_a_summary(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(evaluation=True))
    result = run_sequifier(
        [
            "train",
            "--config-path",
            "configs/train.yaml",
            "-m",
            "global_training.learning_rate=1e-3,3e-3",
            "global_training.batch_size=8,16",
            "training_plan.epochs=1",
        ],
        reference_project,
    )
    assert result.returncode == 0, result.stderr
    job_results = sorted((reference_project / "multirun").glob("*/*/*/result.json"))
    assert len(job_results) == 4
    jobs = [json.loads(p.read_text()) for p in job_results]
    assert len({p.parent for p in job_results}) == 4
    names = {job["model_name"] for job in jobs}
    assert names == {f"tiny-batch_size={bs}-learning_rate={lr}" for lr in ("0.001", "0.003") for bs in ("8", "16")}
    assert all(job["status"] == "ok" for job in jobs)
    for name in names:
        assert any(p.name.startswith(f"{name}-last-") for p in (reference_project / "models").iterdir())
        assert (reference_project / "logs" / name / "validation-metrics.csv").is_file()
    assert "sweep summary" in result.stdout
    for job in jobs:
        assert f"{job['monitored_loss']:.4f}" in result.stdout


def test_several_values_without_multirun_are_refused(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    result = run_sequifier(["train", "global_training.learning_rate=1e-3,3e-3"], reference_project)
    assert result.returncode == 2
    assert "add -m" in result.stderr
    assert not (reference_project / "models").exists()


def test_a_launcher_override_without_multirun_switches_to_multirun(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    result = run_sequifier(["train", "hydra/launcher=basic"], reference_project)
    assert result.returncode == 0, result.stderr
    assert "only acts in multirun" in result.stderr
    assert len(list((reference_project / "multirun").glob("*/*/*/result.json"))) == 1
    assert not (reference_project / "outputs").exists()


def test_a_failing_job_is_reported_and_the_sweep_goes_on(reference_project: Path):
    config = tiny_train_config()
    write_yaml(reference_project / "configs" / "train.yaml", config)
    (reference_project / "data" / "events-split1.parquet").write_bytes(b"not parquet")
    result = run_sequifier(["train", "-m", "seed=1,2", "--skip-metadata"], reference_project)
    assert result.returncode == 2  # a data error
    jobs = [json.loads(p.read_text()) for p in (reference_project / "multirun").glob("*/*/*/result.json")]
    assert len(jobs) == 2 and all(job["status"] == "failed" for job in jobs)
    assert "events-split1.parquet" in result.stdout


def test_a_launcher_selection_is_refused_before_submission_without_distributed(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    for launcher in (
        ["hydra/launcher=slurm_ddp"],
        ["hydra/launcher=submitit_slurm", "hydra.launcher.tasks_per_node=2"],
    ):
        result = run_sequifier(["train", "-m", *launcher], reference_project)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip().splitlines() == [
            "error: hydra.launcher.tasks_per_node: 1 node(s) x 2 task(s) would train the same model 2 times; "
            "set global_training.distributed=true (e.g. global_training/distributed=ddp_gloo_cpu) "
            "or hydra.launcher.tasks_per_node=1"
        ]
        assert not (reference_project / "multirun").exists()


def test_the_slurm_presets_resume_if_a_checkpoint_exists_unless_the_user_chose_a_policy(reference_project: Path):
    config_file = reference_project / "configs" / "train.yaml"
    write_yaml(config_file, tiny_train_config())
    chosen = {}
    for launcher, *more in (
        ["submitit_slurm"],
        ["slurm_ddp", "global_training/distributed=ddp_gloo_cpu"],
        ["submitit_local"],
    ):
        result = run_sequifier(["train", "--cfg", "job", "-m", f"hydra/launcher={launcher}", *more], reference_project)
        assert result.returncode == 0, result.stderr
        chosen[launcher] = yaml.safe_load(result.stdout)["global_training"]["resume"]["policy"]
    assert chosen == {"submitit_slurm": "if_exists", "slurm_ddp": "if_exists", "submitit_local": "never"}
    written = tiny_train_config()
    written["global_training"]["resume"] = {"policy": "never"}
    write_yaml(config_file, written)
    result = run_sequifier(["train", "--cfg", "job", "-m", "hydra/launcher=submitit_slurm"], reference_project)
    assert yaml.safe_load(result.stdout)["global_training"]["resume"]["policy"] == "never"
    write_yaml(config_file, tiny_train_config())
    for chose in ("global_training.resume={policy: never}", "~global_training.resume"):  # the section's default
        result = run_sequifier(
            ["train", "--cfg", "job", "-m", "hydra/launcher=submitit_slurm", chose], reference_project
        )
        assert result.returncode == 0, result.stderr
        assert yaml.safe_load(result.stdout)["global_training"]["resume"]["policy"] == "never"


def test_a_sweep_run_again_under_one_model_name_reports_only_its_own_epochs(reference_project: Path):
    """Job 0 of every sweep runs in a folder named `0`; its metric rows must not merge with an earlier run's."""
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(evaluation=True))
    for epochs in (2, 1):
        result = run_sequifier(
            ["train", "-m", "seed=7", f"training_plan.epochs={epochs}", "--model-name", "rid"], reference_project
        )
        assert result.returncode == 0, result.stderr[-2000:]
    history = read_history(reference_project / "logs" / "rid")
    assert {epoch for by_epoch in history.series("validation").values() for epoch in by_epoch} == {1}
    rows = (reference_project / "logs" / "rid" / "validation-metrics.csv").read_text().splitlines()[1:]
    assert len({row.split(",")[0] for row in rows}) == 2


def test_jobs_that_would_overwrite_each_other_and_flags_that_would_lose_to_an_override_are_refused(
    reference_project: Path,
):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    refusals = {
        ("-m", "seed=1,1"): "the jobs with overrides seed=1 and seed=1 are one run",
        ("-m", "model_name=" + "m" * 195, "seed=1,2"): (
            "model_name: is 202 bytes long; at most 200 are allowed, so that its files (<model>-embedding-best-<epoch>"
            ".onnx, ...) stay within the 255 bytes a file name may have (the job sweeping seed=1 is named"
        ),
        ("-m", "global_training.learning_rate=1e-3,0.001"): "are one run",
        ("-m", "seed=1,2", "--seed", "5"): "--seed: sets seed, which an override sets too",
        ("--model-name", "a", "model_name=b"): "--model-name: sets model_name, which an override sets too",
        ("-m", "hydra/launcher=submitit_local", "+hydra.launcher.timeot_min=5"): (
            "'timeot_min' is not a setting of the launcher submitit_local"
        ),
        ("-m", "hydra.launcher.timeout_min=5"): "'timeout_min' is not a setting of the launcher basic",
        ("hydra.job.chdir=true",): "hydra.job.chdir: is not supported",
        ("-m", "seed=1,2", "hydra.sweep.subdir=same"): "'same' would be the same folder for every job",
        ("-m", "seed=1,2", "hydra.sweep.subdir=x/${hydra.job.num}/../y"): "holds '..'",
        ("-m", "hydra.sweeper.params.seed=1,2"): "hydra.sweeper.params.seed: is not supported",
        ("~hydra/launcher",): "~hydra/launcher: the launcher cannot be removed",
        ("-m", "hydra.launcher=null", "seed=1,2"): "hydra.launcher=null: the launcher cannot be removed",
        ("-m", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=abc"): (
            "the launcher's timeout_min must be an integer, got 'abc'"
        ),
    }
    for arguments, problem in refusals.items():
        result = run_sequifier(["train", "--cfg", "job", *arguments], reference_project)
        assert result.returncode == 2 and problem in result.stderr, (arguments, result.stderr[-1000:])
        assert "Traceback" not in result.stderr


def test_each_jobs_config_warnings_are_said_once_naming_the_jobs_they_hold_for(reference_project: Path):
    config = tiny_train_config()
    config["evaluation"] = {"sources": [{"source": "default"}], "monitor": {"source": "default", "mode": "min"}}
    config["global_training"]["resume"] = {"policy": "never", "checkpoint_path": "x.pt"}
    write_yaml(reference_project / "configs" / "train.yaml", config)
    arguments = ["train", "--cfg", "job", "-m", "evaluation.monitor.mode=min,max", "seed=1,2"]
    result = run_sequifier(arguments, reference_project)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.count("evaluation.monitor.mode is max") == 1
    assert (
        "(jobs with overrides evaluation.monitor.mode=max seed=1; evaluation.monitor.mode=max seed=2)" in result.stderr
    )
    said_for_all = [line for line in result.stderr.splitlines() if "checkpoint_path: is not read" in line]
    assert len(said_for_all) == 1 and "with overrides" not in said_for_all[0]


def test_a_sweep_stopped_by_ctrl_c_lists_the_stopped_job(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(training_plan={"epochs": 3}))
    helper = Path(__file__).with_name("interrupted_train.py")
    result = subprocess.run(
        [sys.executable, str(helper), "sigint-after-batch", "2", "-m", "seed=1,2"],
        cwd=reference_project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 75, result.stderr[-2000:]
    summary = result.stdout[result.stdout.index("sweep summary") :]
    assert "stopped" in summary and "latest checkpoint" in summary and "no job results" not in summary


def test_a_sweep_with_a_failed_job_and_a_stopped_one_exits_as_the_failure_does(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(training_plan={"epochs": 3}))
    helper = Path(__file__).with_name("interrupted_train.py")
    paths = (
        "dataset.part.metadata_config_path=configs/metadata_configs/absent.json,configs/metadata_configs/events.json"
    )
    result = subprocess.run(
        [sys.executable, str(helper), "sigint-after-batch", "2", "--skip-metadata", "-m", paths],
        cwd=reference_project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    summary = result.stdout[result.stdout.index("sweep summary") :]
    assert "failed" in summary and "stopped" in summary, result.stdout[-3000:]
    assert result.returncode == 2  # the failed job is not resumable: a retry on 75 would fail again


def test_a_sweep_into_the_folder_of_a_sweep_running_now_is_refused(reference_project: Path):
    """Their jobs' folders (0/, 1/) and records would be one another's, each summary losing jobs to the other."""
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    folder = reference_project / "shared"
    folder.mkdir()
    running = os.open(folder, os.O_RDONLY)  # as the running sweep holds it
    try:
        fcntl.flock(running, fcntl.LOCK_EX)
        result = run_sequifier(["train", "-m", "seed=1,2", "hydra.sweep.dir=shared"], reference_project)
    finally:
        os.close(running)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: hydra.sweep.dir: {folder} is the folder of another sweep running now, whose jobs' folders and "
        "records this one would write over; choose another hydra.sweep.dir, or wait for that sweep to end"
    )
    assert not any(folder.iterdir()) and not (reference_project / "models").exists()
    released = run_sequifier(["train", "-m", "seed=1,2", "hydra.sweep.dir=shared"], reference_project)
    assert released.returncode == 0, released.stderr
    assert len(list(folder.glob("*/result.json"))) == 2
