"""Spellings of sequifier 3.x train configs are accepted and mean what their canonical spellings mean.

A config written with every 3.x spelling expands to the config written canonically, builds the same
model (the same parameter names and values under a fixed seed) and freezes the same parameters.
"""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import tiny_train_config
from depth_helpers import depth_spec, depth_train_config, subitems

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.model.network import build_network
from sequifier.training.freezing import frozen_parameters


def with_mlp_and_gated_merge(config: dict) -> dict:
    config["model"]["backbone"]["architecture"]["position_encoding"] = {"type": "learned"}
    config["model"]["interface"]["ingestion"]["merge"] = {"type": "gated"}
    config["model"]["interface"]["ingestion"]["output_dim"] = 40
    config["model"]["interface"]["decoder"] = {"type": "mlp", "hidden_dims": [16], "prediction_length": 1}
    return config


def spelled(initialization: dict, freeze: dict, decoder_initialization: dict, **training) -> dict:
    config = with_mlp_and_gated_merge(depth_train_config())
    config["global_training"].update(training)
    config["model"]["backbone"]["initialization"] = initialization
    config["model"]["interface"]["decoder"]["initialization"] = decoder_initialization
    subitems(config)["initialization"] = {"embedding.position": {"weight": "zeros"}}
    config["dataset"]["freeze"] = freeze
    return config


THREE_X = spelled(
    initialization={
        "feed_forward.input": {"weight": {"method": "uniform", "low": -0.2, "high": 0.3}},
        "feed_forward.output": {"bias": "ones"},
        "embedding.input": {"weight": {"method": "glorot_normal", "gain": 0.5}},
        "real_feature_projection": {"weight": {"method": "constant", "value": 0.25}},
        "fallback.linear": {"weight": {"method": "xavier"}},
        "temporal_convolution": {"weight": "zeros"},
    },
    decoder_initialization={"decoder.hidden": {"weight": {"method": "glorot"}}, "decoder.output": {"bias": "zeros"}},
    freeze={
        "backbone": {"freeze": ["feed_forward.input", "position.range_projection"]},
        "ingestion": {"branches": {"subitems": {"freezing_except": ["embedding.position", "fallback.convolution"]}}},
        "ingestion_adapter": {"freeze": []},
        "decoder": {"freeze": ["decoder.hidden"]},
    },
    early_stopping_epochs=3,
)
CANONICAL = spelled(
    initialization={
        "feed_forward.up": {"weight": {"method": "uniform", "a": -0.2, "b": 0.3}},
        "feed_forward.down": {"bias": {"method": "ones"}},
        "embedding.categorical": {"weight": {"method": "xavier_normal", "gain": 0.5}},
        "embedding.real": {"weight": {"method": "constant", "value": 0.25}},
        "merge.gate": {"weight": {"method": "xavier_uniform"}},
    },
    decoder_initialization={
        "decoder.hidden": {"weight": {"method": "xavier_uniform"}},
        "decoder.output": {"bias": {"method": "zeros"}},
    },
    freeze={
        "backbone": {"freeze": ["feed_forward.up"]},
        "ingestion": {"branches": {"subitems": {"freezing_except": ["position"]}}},
        "adapter": {"freeze": []},
        "decoder": {"freeze": ["decoder.hidden"]},
    },
    early_stopping_patience=3,
)
subitems(CANONICAL)["initialization"] = {"position": {"weight": {"method": "zeros"}}}


def test_3x_spellings_expand_to_the_canonical_config():
    assert canonical_config(copy.deepcopy(THREE_X)) == canonical_config(copy.deepcopy(CANONICAL))


def test_3x_spellings_build_the_same_model_and_freeze_the_same_parameters():
    built = {}
    for name, config in (("3x", THREE_X), ("canonical", CANONICAL)):
        spec = depth_spec(config)
        torch.manual_seed(7)
        network = build_network(spec.network)
        frozen = frozen_parameters(network, spec.config)["default"]
        names = {id(p): n for n, p in network.named_parameters()}
        built[name] = (network.state_dict(), sorted(names[i] for i in frozen))
    (ours, our_frozen), (canonical, canonical_frozen) = built["3x"], built["canonical"]
    assert list(ours) == list(canonical)
    for key in canonical:
        torch.testing.assert_close(ours[key], canonical[key], atol=0, rtol=0, msg=key)
    assert our_frozen == canonical_frozen and our_frozen


def test_the_3x_initializers_take_effect():
    network = build_network(depth_spec(THREE_X).network)
    interface = network.interfaces["default"]
    up = network.backbone.layers[0].feed_forward.up.weight.detach()
    assert -0.2 <= float(up.min()) and float(up.max()) <= 0.3
    assert torch.all(network.backbone.layers[0].feed_forward.down.bias == 1)
    assert torch.all(interface.ingestion.branches["subitems"].embeddings["subitemAmount"].weight == 0.25)
    assert torch.all(interface.ingestion.branches["subitems"].position.position.weight == 0)
    assert torch.all(interface.decoder.heads["nextAction"].bias == 0)


@pytest.mark.parametrize(
    "change, where",
    [
        (
            lambda c: c["global_training"].update(early_stopping_epochs=2, early_stopping_patience=2),
            "global_training.early_stopping_epochs",
        ),
        (
            lambda c: c["dataset"].update(freeze={"adapter": {"freeze": []}, "ingestion_adapter": {"freeze": []}}),
            "dataset_training.default.freeze.ingestion_adapter",
        ),
        (
            lambda c: c["model"]["backbone"].update(
                initialization={"feed_forward.input": {"bias": "zeros"}, "feed_forward.up": {"bias": "ones"}}
            ),
            "model.backbone.initialization.feed_forward.up",
        ),
    ],
    ids=["early-stopping", "adapter-freeze", "group-twice"],
)
def test_a_3x_spelling_beside_its_canonical_spelling_is_refused(change, where):
    config = depth_train_config()
    change(config)
    with pytest.raises(UserError) as error:
        canonical_config(config)
    assert error.value.where == where


def test_constant_needs_its_value():
    config = depth_train_config()
    config["model"]["backbone"]["initialization"] = {"normalization": {"weight": {"method": "constant"}}}
    with pytest.raises(UserError, match=r"normalization\.weight\.value: constant needs the value"):
        canonical_config(config)


def test_the_3x_early_stopping_spelling_alone_in_a_file_is_read_through_composition(tmp_path):
    from conftest import tiny_train_config, write_yaml

    from sequifier.config.compose import compose_config

    config = tiny_train_config()
    config["global_training"]["early_stopping_epochs"] = 3
    composed = compose_config(write_yaml(tmp_path / "train.yaml", config), [])
    assert canonical_config(composed).global_training.early_stopping_patience == 3
    config["global_training"]["early_stopping_patience"] = 2
    with pytest.raises(UserError, match="set only one of them"):
        canonical_config(compose_config(write_yaml(tmp_path / "both.yaml", config), []))


def test_3x_read_format_csv_is_the_reader_of_merged_splits():
    """3.x reads merged csv splits with read_format csv; here the merged-split reader (parquet) reads them."""
    config = tiny_train_config()
    config["global_training"]["read_format"] = "csv"
    assert canonical_config(config).global_training.read_format == "parquet"
