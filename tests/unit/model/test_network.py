"""Network construction: interfaces, composite ingestion widths, the parameter catalog and initialization."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from conftest import REFERENCE_DIR, tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.model.network import build_network
from sequifier.model.parameters import parameter_groups


def build(config: dict, seed: int = 0):
    spec = resolve(canonical_config(config), run_dir=Path("."), cwd=REFERENCE_DIR)
    torch.manual_seed(seed)
    return build_network(spec.network)


def two_datasets(shared_interface: bool) -> dict:
    config = tiny_train_config(evaluation=False)
    interface = config["model"].pop("interface")
    config["model"]["interfaces"] = {"first": interface, "second": copy.deepcopy(interface)}
    dataset = config.pop("dataset")
    config["dataset_training"] = {
        "a": {"model_interface": "first", "parts": {"p": dataset["part"]}, "criterion": dataset["criterion"]},
        "b": {
            "model_interface": "first" if shared_interface else "second",
            "parts": {"p": dataset["part"]},
            "criterion": dataset["criterion"],
        },
    }
    config["training_plan"] = {
        "phases": [{"name": "train", "epochs": 1, "sources": [{"source": "a"}, {"source": "b"}]}]
    }
    return config


def test_datasets_on_one_interface_share_its_weights():
    network = build(two_datasets(shared_interface=True))
    assert list(network.interfaces) == ["first"]


def test_two_interfaces_have_distinct_weights_around_one_backbone():
    network = build(two_datasets(shared_interface=False))
    first, second = network.interfaces["first"], network.interfaces["second"]
    first_ids = {id(p) for p in first.parameters()}
    assert first_ids.isdisjoint(id(p) for p in second.parameters())
    assert len(list(network.backbone.parameters())) > 0


def composite_config() -> dict:
    config = tiny_train_config()
    config["model"]["interface"]["ingestion"] = {
        "type": "composite",
        "output_dim": 24,
        "branches": {
            "categories": {"type": "embedding", "columns": ["event", "channel"], "output_dim": 12},
            "nested": {
                "type": "composite",
                "output_dim": 8,
                "branches": {
                    "amount": {"type": "embedding", "columns": ["amount"], "output_dim": 6},
                    "event_again": {"type": "embedding", "columns": ["event"], "output_dim": 4},
                },
            },
        },
        "allow_shared_columns": True,
        "merge": {"type": "concat"},
    }
    return config


def test_composite_tree_resolves_widths_and_projects_to_dim_model():
    network = build(composite_config())
    interface = network.interfaces["default"]
    ingestion = interface.ingestion
    assert set(ingestion.branches) == {"categories", "nested"}
    assert ingestion.merge.in_features == 12 + 8 and ingestion.merge.out_features == 24
    assert (
        ingestion.branches["nested"].merge.in_features == 6 + 4 and ingestion.branches["nested"].merge.out_features == 8
    )
    assert interface.adapter.in_features == 24 and interface.adapter.out_features == 16
    inputs = {
        "event": torch.randint(3, 15, (2, 8)),
        "channel": torch.randint(3, 6, (2, 8)),
        "amount": torch.randn(2, 8),
    }
    outputs = network("default", inputs, None)
    assert outputs["event"].shape == (2, 8, 13) and outputs["amount"].shape == (2, 8)  # 12 values + [other]


def test_every_parameter_has_a_semantic_group():
    groups = parameter_groups(build(composite_config()))
    assert {
        "attention.qkv",
        "attention.output",
        "feed_forward.up",
        "feed_forward.down",
        "normalization",
        "embedding.categorical",
        "embedding.real",
        "merge.projection",
        "adapter",
        "decoder.output",
    } <= set(groups.values())
    assert groups["interfaces.default.ingestion.merge.weight"] == "merge.projection"
    assert groups["backbone.layers.0.attention.qkv.weight"] == "attention.qkv"


def seeded(config: dict, backbone_seed=None, branch_seed=None) -> dict:
    config = copy.deepcopy(config)
    if backbone_seed is not None:
        config["model"]["backbone"]["initialization_seed"] = backbone_seed
    if branch_seed is not None:
        config["model"]["interface"]["ingestion"]["initialization_seed"] = branch_seed
    return config


def state(network) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in network.state_dict().items()}


def test_the_same_initialization_seed_gives_the_same_weights_whatever_the_run_seed():
    config = seeded(composite_config(), backbone_seed=7, branch_seed=9)
    a, b = state(build(config, seed=1)), state(build(config, seed=2))
    assert all(torch.equal(a[k], b[k]) for k in a if ".decoder." not in k)
    assert not torch.equal(
        a["interfaces.default.decoder.heads.event.weight"], b["interfaces.default.decoder.heads.event.weight"]
    )


def test_seeded_weights_do_not_depend_on_the_order_of_construction():
    config = seeded(composite_config(), branch_seed=9)
    swapped = copy.deepcopy(config)
    branches = swapped["model"]["interface"]["ingestion"]["branches"]
    swapped["model"]["interface"]["ingestion"]["branches"] = dict(reversed(list(branches.items())))
    a, b = state(build(config, seed=1)), state(build(swapped, seed=1))
    for name in ("categories.embeddings.event.weight", "nested.branches.amount.embeddings.amount.weight"):
        key = f"interfaces.default.ingestion.branches.{name}"
        assert torch.equal(a[key], b[key])


def test_different_branch_paths_get_different_weights():
    config = seeded(composite_config(), branch_seed=9)
    weights = state(build(config))
    first = weights["interfaces.default.ingestion.branches.nested.branches.amount.embeddings.amount.weight"]
    second_config = copy.deepcopy(config)
    nested = second_config["model"]["interface"]["ingestion"]["branches"]["nested"]["branches"]
    nested["amount_renamed"] = nested.pop("amount")
    second = state(build(second_config))[
        "interfaces.default.ingestion.branches.nested.branches.amount_renamed.embeddings.amount.weight"
    ]
    assert not torch.equal(first, second)


def test_an_omitted_seed_follows_the_run_seed():
    config = composite_config()
    assert torch.equal(
        state(build(config, seed=3))["backbone.layers.0.attention.qkv.weight"],
        state(build(config, seed=3))["backbone.layers.0.attention.qkv.weight"],
    )
    assert not torch.equal(
        state(build(config, seed=3))["backbone.layers.0.attention.qkv.weight"],
        state(build(config, seed=4))["backbone.layers.0.attention.qkv.weight"],
    )


def test_initialization_overrides_inherit_down_the_tree():
    config = composite_config()
    config["model"]["backbone"]["initialization"] = {
        "attention.qkv": {"weight": {"method": "zeros"}},
        "feed_forward.up": {"bias": {"method": "ones"}},
    }
    ingestion = config["model"]["interface"]["ingestion"]
    ingestion["initialization"] = {"embedding": {"weight": {"method": "ones"}}, "merge": {"bias": {"method": "zeros"}}}
    ingestion["branches"]["nested"]["initialization"] = {"embedding": {"weight": {"method": "zeros"}}}
    weights = state(build(config))
    assert torch.all(weights["backbone.layers.0.attention.qkv.weight"] == 0)
    assert torch.all(weights["backbone.layers.0.feed_forward.up.bias"] == 1)
    branches = "interfaces.default.ingestion.branches"
    assert torch.all(weights[f"{branches}.categories.embeddings.event.weight"] == 1)
    assert torch.all(weights[f"{branches}.nested.branches.amount.embeddings.amount.weight"] == 0)
    assert torch.all(weights["interfaces.default.ingestion.merge.bias"] == 0)
    assert torch.all(weights[f"{branches}.nested.merge.bias"] == 0)
    assert not torch.all(weights["interfaces.default.ingestion.merge.weight"] == 0)


def test_a_fan_based_initializer_on_vectors_is_a_user_error():
    config = tiny_train_config()
    config["model"]["backbone"]["initialization"] = {"normalization": {"weight": {"method": "xavier_uniform"}}}
    with pytest.raises(UserError, match="model.backbone.initialization.normalization.weight"):
        build(config)
