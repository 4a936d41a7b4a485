"""Each job of `sequifier train` is composed, resolved and its metadata read once, even across a sweep."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import tiny_train_config, write_yaml

from sequifier import cli
from sequifier.commands import train
from sequifier.config import resolve as resolve_module


@pytest.fixture
def counted(monkeypatch) -> Counter:
    calls: Counter = Counter()

    def counting(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(train, "compose_entry", counting("compose", train.compose_entry))
    monkeypatch.setattr(train, "resolve", counting("resolve", train.resolve))
    monkeypatch.setattr(resolve_module, "read_metadata", counting("read_metadata", resolve_module.read_metadata))
    monkeypatch.setattr(train, "read_entry", counting("read_file", train.read_entry))
    return calls


def _project(reference_project: Path, monkeypatch) -> Path:
    config = tiny_train_config(training_plan={"epochs": 1})
    config["global_training"]["save_interval_epochs"] = None
    write_yaml(reference_project / "configs" / "train.yaml", config)
    monkeypatch.chdir(reference_project)
    return reference_project


def test_a_single_run_composes_resolves_and_reads_metadata_once(reference_project: Path, monkeypatch, counted: Counter):
    project = _project(reference_project, monkeypatch)
    assert cli.main(["train", "global_training.batch_size=32"]) == 0
    assert (project / "models").is_dir()
    assert counted == Counter(read_file=1, compose=1, resolve=1, read_metadata=1)


def test_a_two_job_sweep_composes_and_resolves_each_job_once(reference_project: Path, monkeypatch, counted: Counter):
    project = _project(reference_project, monkeypatch)
    assert cli.main(["train", "-m", "global_training.batch_size=16,32"]) == 0
    assert len(list((project / "models").glob("tiny-batch_size=*-last-1.onnx"))) == 2
    assert counted == Counter(read_file=1, compose=2, resolve=2, read_metadata=2)
