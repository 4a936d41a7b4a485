"""Sweep jobs get model names that carry their swept values, so their artifacts never overwrite each other."""

from __future__ import annotations

from sequifier.commands.sweep import sweep_model_name, swept_values


def test_sweep_model_names_carry_the_swept_values():
    assert sweep_model_name("m", (("global_training.learning_rate", "0.001"),)) == "m-learning_rate=0.001"
    swept = (("a.dropout", "0.1"), ("b.dropout", "0.2"))
    assert sweep_model_name("m", swept) == "m-a.dropout=0.1-b.dropout=0.2"
    assert sweep_model_name("m", ()) == "m"


def test_values_that_differ_only_where_a_file_name_cannot_hold_them_give_distinct_names():
    names = {
        sweep_model_name("m", (("dataset.part.metadata_config_path", value),))
        for value in ("configs/events.json", "configs_events.json", "configs%2Fevents.json", "configs\\events.json")
    }
    assert len(names) == 4 and not any("/" in name or "\\" in name for name in names)
    assert sweep_model_name("m", (("model/backbone", "tiny"),)) == "m-model_backbone=tiny"


def test_swept_values_are_read_with_hydras_grammar_in_its_order():
    """Values holding commas, '=' or quotes (which override_dirname joins items with) keep their pairs."""
    task = ("seed=3", "model_name='a,b'", "+x=[1,2]", "global_training.learning_rate=1e-3", 'y="k=v"')
    swept = swept_values(task, {"seed"})
    assert swept == (
        ("x", "[1,2]"),
        ("global_training.learning_rate", "1e-3"),
        ("model_name", "a,b"),
        ("y", "k=v"),
    )
    assert sweep_model_name("m", swept) == "m-x=[1,2]-learning_rate=1e-3-model_name=a,b-y=k=v"


def test_a_value_hydras_sweeper_escaped_is_named_as_it_reads():
    """The sweeper writes a swept `a:b` or `a b` back as `a\\:b` / `a\\ b`; the name holds the value, not the escape."""
    swept = swept_values(("model_name=a\\:b", "tag=x\\ y"), set())
    assert swept == (("model_name", "a:b"), ("tag", "x y"))
    assert "%5C" not in sweep_model_name("m", swept)
