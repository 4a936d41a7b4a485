"""Sweep jobs get model names that carry their swept values, so their artifacts never overwrite each other."""

from __future__ import annotations

from sequifier.commands.sweep import sweep_model_name


def test_sweep_model_names_carry_the_swept_values():
    assert sweep_model_name("m", "global_training.learning_rate=0.001") == "m-learning_rate=0.001"
    assert sweep_model_name("m", "a.dropout=0.1,b.dropout=0.2") == "m-a.dropout=0.1-b.dropout=0.2"
    assert sweep_model_name("m", "") == "m"


def test_values_that_differ_only_where_a_file_name_cannot_hold_them_give_distinct_names():
    names = {
        sweep_model_name("m", f"dataset.part.metadata_config_path={value}")
        for value in ("configs/events.json", "configs_events.json", "configs%2Fevents.json", "configs\\events.json")
    }
    assert len(names) == 4 and not any("/" in name or "\\" in name for name in names)
    assert sweep_model_name("m", "model/backbone=tiny") == "m-model_backbone=tiny"
