"""Valid settings that do nothing where they stand are said before training."""

from __future__ import annotations

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
