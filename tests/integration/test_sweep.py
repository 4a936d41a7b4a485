"""`sequifier train -m` runs each combination as its own job, with its own directory and model name."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_sequifier, tiny_train_config, write_yaml


def test_multirun_sweep_gives_distinct_jobs_and_summary(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(evaluation=True))
    result = run_sequifier(["train", "--config-path", "configs/train.yaml", "-m", "global_training.learning_rate=1e-3,3e-3"], reference_project)
    assert result.returncode == 0, result.stderr
    job_results = sorted((reference_project / "multirun").glob("*/*/*/result.json"))
    assert len(job_results) == 2
    jobs = [json.loads(p.read_text()) for p in job_results]
    assert len({p.parent for p in job_results}) == 2
    names = {job["model_name"] for job in jobs}
    assert names == {"tiny-learning_rate=0.001", "tiny-learning_rate=0.003"}
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
