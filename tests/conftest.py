"""Shared test fixtures: the reference-v3 project, tiny train configs, and running the CLI as a user would."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REFERENCE_DIR = Path(__file__).resolve().parent / "fixtures" / "reference-v3"

TINY_TRAIN = {
    "project_root": ".",
    "model_name": "tiny",
    "device": "cpu",
    "seed": 11,
    "global_training": {"context_length": 8, "batch_size": 16, "learning_rate": 0.003, "inference_batch_size": 64},
    "model": {
        "backbone": {
            "architecture": {
                "dim_model": 16,
                "num_layers": 1,
                "attention": {"type": "mha", "n_heads": 2},
                "feed_forward": {"dim": 32, "activation": "swiglu"},
                "normalization": {"type": "rmsnorm", "norm_first": True},
                "position_encoding": {"type": "rope"},
                "dropout": 0.1,
            }
        },
        "interface": {
            "input_columns": ["event", "channel", "amount"],
            "target_columns": ["event", "amount"],
            "ingestion": {
                "type": "embedding",
                "output_dim": 16,
                "feature_embedding_dims": {"event": 8, "channel": 4, "amount": 4},
            },
            "decoder": {"type": "linear", "prediction_length": 1, "support": 1},
        },
    },
    "dataset": {
        "part": {"metadata_config_path": "configs/metadata_configs/events.json"},
        "criterion": {"event": "CrossEntropyLoss", "amount": "MSELoss"},
    },
    "training_plan": {"epochs": 1},
    "evaluation": True,
}


@pytest.fixture
def hangup_as(request):
    """SIGHUP's disposition while the test runs (this process may have been started under `nohup`)."""
    before = signal.signal(signal.SIGHUP, request.param)
    yield
    signal.signal(signal.SIGHUP, before)


@pytest.fixture
def reference_project(tmp_path: Path) -> Path:
    """A writable copy of the reference-v3 project (raw data, preprocessed splits, metadata)."""
    project = tmp_path / "project"
    shutil.copytree(REFERENCE_DIR, project)
    return project


def write_yaml(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def tiny_train_config(**top_level) -> dict:
    """A deep copy of the tiny singleton train config with top-level keys replaced."""
    config = yaml.safe_load(yaml.safe_dump(TINY_TRAIN))
    config.update(top_level)
    return config


def run_sequifier(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `sequifier ARGS` in a fresh interpreter, as a user's shell would."""
    return subprocess.run(
        [sys.executable, "-m", "sequifier", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def only_contract(bundle: dict) -> dict:
    """The contract of a PT bundle that serves one interface."""
    (contract,) = bundle["model_config"]["contracts"].values()
    return contract
