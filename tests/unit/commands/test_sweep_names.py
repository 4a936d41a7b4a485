"""Sweep jobs get model names that carry their swept values, so their artifacts never overwrite each other."""

from __future__ import annotations

from sequifier.commands.sweep import sweep_model_name


def test_sweep_model_names_carry_the_swept_values():
    assert sweep_model_name("m", "global_training.learning_rate=0.001") == "m-learning_rate=0.001"
    assert sweep_model_name("m", "a.dropout=0.1,b.dropout=0.2") == "m-a.dropout=0.1-b.dropout=0.2"
    assert sweep_model_name("m", "") == "m"
