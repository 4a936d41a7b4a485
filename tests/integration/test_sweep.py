"""`sequifier train -m` runs each combination as its own job, with its own directory and model name."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_sequifier, tiny_train_config, write_yaml


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
    assert result.returncode == 1
    jobs = [json.loads(p.read_text()) for p in (reference_project / "multirun").glob("*/*/*/result.json")]
    assert len(jobs) == 2 and all(job["status"] == "failed" for job in jobs)
    assert "events-split1.parquet" in result.stdout
