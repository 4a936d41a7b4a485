"""Valid settings that do nothing where they stand are said before training."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config, compose_config
from sequifier.config.validate_training import config_warnings


def warnings_of(tmp_path: Path, phase: dict) -> list[str]:
    config = tiny_train_config(training_plan={"phases": [{"name": "p", "epochs": 1, **phase}]})
    path = write_yaml(tmp_path / "train.yaml", config)
    return config_warnings(canonical_config(compose_config(path, [])))


@pytest.mark.parametrize(
    "phase, said",
    [
        (
            {"mode": "sequential", "selection": "weighted_random", "sources": [{"source": "default"}]},
            "training_plan.phases[0].selection: weighted_random does nothing in a sequential phase",
        ),
        (
            {"mode": "sequential", "sources": [{"source": "default", "batches_per_selection": 4}]},
            "training_plan.phases[0].sources[0].batches_per_selection: does nothing in a sequential phase",
        ),
        (
            {"mode": "interleaved", "selection": "round_robin", "sources": [{"source": "default", "weight": 5.0}]},
            "training_plan.phases[0].sources[0].weight: only selection weighted_random reads it",
        ),
    ],
)
def test_selection_settings_a_phase_never_reads_are_warned_about(tmp_path, phase, said):
    assert warnings_of(tmp_path, phase) == [said]


def test_settings_the_phase_reads_give_no_warning(tmp_path):
    phase = {
        "mode": "interleaved",
        "selection": "weighted_random",
        "sources": [{"source": "default", "weight": 5.0, "batches_per_selection": 2}],
    }
    assert warnings_of(tmp_path, phase) == []


def test_an_interface_no_dataset_names_is_warned_about(tmp_path):
    config = canonical_config(compose_config(write_yaml(tmp_path / "train.yaml", tiny_train_config()), []))
    (name, interface), *_ = config.model.interfaces.items()
    spare = replace(config.model, interfaces={name: interface, "spare": interface})
    assert config_warnings(config) == []
    assert config_warnings(replace(config, model=spare)) == [
        "model.interfaces.spare: no dataset's model_interface names it, so it is not built, trained or exported"
    ]


@pytest.mark.parametrize(
    "changes, said",
    [
        (
            {"export_onnx": False},
            "export_onnx and export_pt are both false: the run exports no model, only its checkpoints",
        ),
        (
            {"export_generative_model": False},
            "export_generative_model and export_embedding_model are both false: the run exports no model",
        ),
        (
            {"export_with_dropout": True, "export_onnx": False, "export_pt": True},
            "export_with_dropout: only ONNX export reads it, and export_onnx is false",
        ),
        (
            {"global_training": {"resume": {"policy": "never", "checkpoint_path": "checkpoints/x.pt"}}},
            "global_training.resume.checkpoint_path: is not read, since global_training.resume.policy is never",
        ),
    ],
    ids=["no-format", "no-artifact", "dropout-without-onnx", "checkpoint-never-read"],
)
def test_settings_that_leave_a_run_without_models_or_are_never_read_are_warned_about(tmp_path, changes, said):
    config = tiny_train_config()
    for key, value in changes.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    path = write_yaml(tmp_path / "train.yaml", config)
    assert config_warnings(canonical_config(compose_config(path, []))) == [said]
