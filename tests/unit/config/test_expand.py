"""Singleton expansion and validation of the train config."""

from __future__ import annotations

import pytest
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.expand import expand_singletons


def canonical_twin() -> dict:
    config = tiny_train_config()
    interface = config["model"].pop("interface")
    config["model"]["interfaces"] = {"default": interface}
    dataset = config.pop("dataset")
    dataset["parts"] = {"default": dataset.pop("part")}
    dataset["model_interface"] = "default"
    config["dataset_training"] = {"default": dataset}
    config["training_plan"] = {
        "phases": [{"name": "train", "epochs": 1, "mode": "sequential", "sources": [{"source": "default"}]}]
    }
    config["evaluation"] = {"sources": [{"source": "default"}]}
    return config


def test_singleton_and_canonical_spellings_give_the_same_config():
    assert canonical_config(tiny_train_config()) == canonical_config(canonical_twin())


def test_singular_and_plural_at_one_level_is_an_error():
    config = tiny_train_config()
    config["model"]["interfaces"] = {"other": config["model"]["interface"]}
    with pytest.raises(UserError) as error:
        expand_singletons(config)
    assert error.value.where == "model.interface"


def test_evaluation_source_cannot_be_inferred_from_several_datasets():
    config = canonical_twin()
    config["dataset_training"]["second"] = config["dataset_training"]["default"]
    config["evaluation"] = True
    with pytest.raises(UserError) as error:
        expand_singletons(config)
    assert error.value.where == "evaluation"


@pytest.mark.parametrize(
    "change, where, fragment",
    [
        (lambda c: c["global_training"].update(batch_size="8"), "global_training.batch_size", "expected an integer"),
        (
            lambda c: c["model"]["backbone"]["architecture"]["attention"].update(n_heads=3),
            "model.backbone.architecture.attention.n_heads",
            "does not divide",
        ),
        (
            lambda c: c["dataset"]["criterion"].update(event="CrossEntropy"),
            "dataset_training.default.criterion.event",
            "did you mean 'CrossEntropyLoss'",
        ),
        (lambda c: c["dataset"]["criterion"].pop("amount"), "dataset_training.default.criterion", "'amount'"),
        (
            lambda c: c["model"]["backbone"]["architecture"]["normalization"].update(type="batchnorm"),
            "model.backbone.architecture.normalization.type",
            "choose one of",
        ),
        (lambda c: c.update(training_spec={}), "training_spec", "global_training"),
        (lambda c: c["model"].update(decoder={}), "model.decoder", "model.interfaces.<name>.decoder"),
    ],
)
def test_invalid_configs_name_the_canonical_path(change, where, fragment):
    config = tiny_train_config()
    change(config)
    with pytest.raises(UserError) as error:
        canonical_config(config)
    assert where in str(error.value) and fragment in str(error.value)


def test_accepted_alias_maps_to_the_canonical_spelling():
    config = tiny_train_config()
    config["model"]["backbone"]["architecture"]["normalization"]["type"] = "layer_norm"
    assert canonical_config(config).model.backbone.architecture.normalization.type == "layernorm"
