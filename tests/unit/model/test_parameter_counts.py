"""Configs written for sequifier 3.x build models with the parameter counts 3.x builds for them.

The counts were measured with sequifier 3.1.1.0: each config below was trained for one epoch on
the reference-v3 data (the depth configs on reference-v3-depth) with `export_pt: true`, and the
parameters of the written model counted (each shared tensor once; rope's `inv_freq` buffer is not
a parameter).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import REFERENCE_DIR
from depth_helpers import DEPTH_DIR, depth_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.model.network import build_network

CRITERIA = {"event": "CrossEntropyLoss", "channel": "CrossEntropyLoss", "amount": "MSELoss", "delay": "MSELoss"}


def singleton(architecture: dict, interface: dict, context_length: int = 16) -> dict:
    """A 3.x singleton train config on the reference-v3 events data."""
    return {
        "project_root": ".",
        "model_name": "pinned",
        "device": "cpu",
        "seed": 1010,
        "global_training": {
            "training_objective": "causal",
            "context_length": context_length,
            "batch_size": 64,
            "inference_batch_size": 64,
            "learning_rate": 0.0001,
        },
        "model": {"backbone": {"architecture": architecture}, "interface": interface},
        "dataset": {
            "part": {"metadata_config_path": "configs/metadata_configs/events.json"},
            "criterion": {t: CRITERIA[t] for t in interface["target_columns"]},
        },
        "training_plan": {"epochs": 1},
        "evaluation": True,
    }


GUIDE_ARCHITECTURE = {
    "dim_model": 128,
    "max_context_length": 512,
    "num_layers": 6,
    "attention": {"type": "mha", "n_heads": 8, "n_kv_heads": 8, "output_projection": True},
    "feed_forward": {"dim": 512, "activation": "swiglu"},
    "normalization": {"type": "rmsnorm", "norm_first": True},
    "position_encoding": {"type": "rope", "theta": 10000},
    "dropout": 0.1,
    "shared_layer_groups": [],
}

PINNED = {
    # The train guide's singleton model: rope, no attention biases, [other] predictable by default.
    "guide_singleton": (
        singleton(
            GUIDE_ARCHITECTURE,
            {
                "input_columns": ["event"],
                "target_columns": ["event"],
                "ingestion": {"type": "embedding", "output_dim": 128},
                "decoder": {"type": "linear", "prediction_length": 1, "support": 1},
            },
        ),
        1585037,
    ),
    # Learned positions default to per_feature: one table of context_length rows per input column.
    "learned_per_feature_mixed": (
        singleton(
            {
                "dim_model": 32,
                "max_context_length": 40,
                "num_layers": 2,
                "attention": {"type": "mha", "n_heads": 4},
                "feed_forward": {"dim": 64, "activation": "swiglu"},
            },
            {
                "input_columns": ["event", "channel", "amount", "delay"],
                "target_columns": ["event", "amount"],
                "ingestion": {
                    "type": "embedding",
                    "output_dim": 32,
                    "dropout": 0.1,
                    "feature_embedding_dims": {"event": 12, "channel": 8, "amount": 6, "delay": 6},
                },
                "decoder": {"type": "linear", "prediction_length": 2},
            },
        ),
        22186,
    ),
    # Categorical widths by log-cardinality, an adapter to dim_model, explicit special tokens.
    "gqa_gelu_layernorm_postnorm_sinusoidal": (
        singleton(
            {
                "dim_model": 32,
                "num_layers": 2,
                "attention": {"type": "gqa", "n_heads": 4, "n_kv_heads": 2, "output_projection": False},
                "feed_forward": {"dim": 48, "activation": "gelu"},
                "normalization": {"type": "layer_norm", "norm_first": False},
                "position_encoding": {"type": "sinusoidal"},
            },
            {
                "input_columns": ["event", "channel"],
                "target_columns": ["event", "channel"],
                "categorical_decoder_special_tokens": {"channel": []},
                "ingestion": {"type": "embedding", "output_dim": 24},
                "decoder": {"type": "linear", "prediction_length": 1},
            },
        ),
        12254,
    ),
    # Global learned positions (max_context_length rows), nested composite merges, an mlp decoder over support 2.
    "composite_global_mlp_support": (
        singleton(
            {
                "dim_model": 48,
                "max_context_length": 24,
                "num_layers": 2,
                "attention": {"type": "mqa", "n_heads": 4},
                "feed_forward": {"dim": 96, "activation": "relu"},
                "normalization": {"type": "rmsnorm", "norm_first": True},
                "position_encoding": {"type": "learned"},
                "positional_encoding_scope": "global",
            },
            {
                "input_columns": ["event", "channel", "amount", "delay"],
                "target_columns": ["event", "delay"],
                "ingestion": {
                    "type": "composite",
                    "output_dim": 40,
                    "merge": {"type": "concat"},
                    "branches": {
                        "categories": {"type": "embedding", "columns": ["event", "channel"], "output_dim": 20},
                        "reals": {
                            "type": "composite",
                            "output_dim": 16,
                            "merge": {"type": "sum"},
                            "branches": {
                                "amount": {"type": "embedding", "columns": ["amount"], "output_dim": 16},
                                "delay": {"type": "embedding", "columns": ["delay"], "output_dim": 8},
                            },
                        },
                    },
                },
                "decoder": {"type": "mlp", "prediction_length": 3, "support": 2, "hidden_dims": [64, 32]},
            },
        ),
        44250,
    ),
    # Shared layers (one set of weights per group), per-feature positions in composite leaves.
    "shared_layers_composite_per_feature": (
        singleton(
            {
                "dim_model": 32,
                "num_layers": 4,
                "attention": {"type": "mha", "n_heads": 2},
                "feed_forward": {"dim": 40, "activation": "swiglu"},
                "shared_layer_groups": [[0, 1], [2, 3]],
            },
            {
                "input_columns": ["event", "channel", "amount"],
                "target_columns": ["channel", "amount"],
                "ingestion": {
                    "type": "composite",
                    "branches": {
                        "categories": {"type": "embedding", "columns": ["event", "channel"], "output_dim": 21},
                        "amount": {"type": "embedding", "columns": ["amount"], "output_dim": 7},
                    },
                },
                "decoder": {"type": "linear", "prediction_length": 1},
            },
            context_length=12,
        ),
        17933,
    ),
}


def parameter_count(config: dict) -> int:
    spec = resolve(canonical_config(copy.deepcopy(config)), run_dir=Path("."), cwd=REFERENCE_DIR)
    return sum(p.numel() for p in build_network(spec.network).parameters())


@pytest.mark.parametrize("name", list(PINNED))
def test_a_3x_config_builds_as_many_parameters_as_in_3x(name: str):
    config, measured_with_3x = PINNED[name]
    assert parameter_count(config) == measured_with_3x


def depth_config(change) -> dict:
    """The scaled-down guide depth model (depth_helpers) with `change` applied."""
    config = depth_train_config()
    change(config["model"]["backbone"]["architecture"], config["model"]["interface"])
    return config


def sinusoidal_mqa_layernorm_shared(backbone: dict, interface: dict) -> None:
    backbone["position_encoding"] = {"type": "learned"}
    branch = interface["ingestion"]["branches"]["subitems"]
    del branch["initialization"]
    branch.update(feature_embedding_dims={"subitemType": 10, "subitemAmount": 6}, output_dim=24)
    branch["architecture"] = {
        "dim_model": 20,
        "num_layers": 3,
        "attention": {"type": "mqa", "n_heads": 4},
        "feed_forward": {"dim": 24, "activation": "gelu"},
        "normalization": {"type": "layer_norm", "norm_first": True},
        "position_encoding": {"type": "sinusoidal"},
        "dropout": 0.0,
        "shared_layer_groups": [[0, 2]],
    }


ROPE_POSTNORM_RELU = {
    "dim_model": 16,
    "num_layers": 1,
    "attention": {"type": "mha", "n_heads": 2},
    "feed_forward": {"dim": 24, "activation": "relu"},
    "normalization": {"type": "rmsnorm", "norm_first": False},
    "position_encoding": {"type": "rope"},
}


def categorical_children_rope_postnorm(backbone: dict, interface: dict) -> None:
    interface["input_columns"] = ["accountType", "subitemType"]
    branch = interface["ingestion"]["branches"]["subitems"]
    for key in ("initialization", "feature_embedding_dims"):
        del branch[key]
    branch.update(columns=["subitemType"], architecture=dict(ROPE_POSTNORM_RELU))


def depth_root(backbone: dict, interface: dict) -> None:
    interface["input_columns"] = ["subitemType"]
    interface["ingestion"] = {
        "type": "depth_transformer",
        "layout": "subitems",
        "columns": ["subitemType"],
        "output_dim": 32,
        "dropout": 0.1,
        "initialization_seed": 12345,
        "architecture": dict(ROPE_POSTNORM_RELU),
    }


def merged(merge: str):
    """All four columns, learned per-feature positions, a gated or attention merge, an mlp decoder over support 2."""

    def change(backbone: dict, interface: dict) -> None:
        backbone["position_encoding"] = {"type": "learned"}
        interface["input_columns"] = ["accountType", "subitemType", "subitemAmount", "nextAction"]
        ingestion = interface["ingestion"]
        ingestion.update(output_dim=40, allow_shared_columns=True, merge={"type": merge})
        ingestion["branches"]["item"] = {
            "type": "embedding",
            "columns": ["accountType", "nextAction"],
            "output_dim": 8,
            "feature_embedding_dims": {"accountType": 4, "nextAction": 4},
        }
        branch = ingestion["branches"]["subitems"]
        branch.update(feature_embedding_dims={"subitemType": 6, "subitemAmount": 4}, output_dim=20)
        branch["architecture"]["dim_model"] = 12
        interface["decoder"] = {"type": "mlp", "prediction_length": 1, "hidden_dims": [16], "support": 2}

    return change


# Measured with 3.1.1.0 on the reference-v3-depth data (its pt shards, `read_format: pt`) as above.
PINNED_DEPTH = {
    # The train guide's depth example at a quarter width: rope backbone, gqa/rmsnorm/learned depth encoder.
    "guide_depth_scaled_down": (depth_config(lambda backbone, interface: None), 26648),
    # Learned per-feature backbone positions (a temporal table on the depth leaf), sinusoidal mqa/layernorm/gelu
    # depth encoder with shared layers and an input projection, a concat projection.
    "depth_sinusoidal_mqa_layernorm_shared": (depth_config(sinusoidal_mqa_layernorm_shared), 26806),
    # Categorical children sharing the depth width, rope/mha/relu, post-norm (no final norm).
    "depth_categorical_rope_postnorm": (depth_config(categorical_children_rope_postnorm), 23540),
    # A depth_transformer as the root ingestion.
    "depth_root": (depth_config(depth_root), 23628),
    "depth_gated_merge_mlp_support": (depth_config(merged("gated")), 29180),
    "depth_attention_merge_mlp_support": (depth_config(merged("attention")), 29058),
}


@pytest.mark.parametrize("name", list(PINNED_DEPTH))
def test_a_3x_depth_config_builds_as_many_parameters_as_in_3x(name: str):
    config, measured_with_3x = PINNED_DEPTH[name]
    spec = resolve(canonical_config(copy.deepcopy(config)), run_dir=Path("."), cwd=DEPTH_DIR)
    assert sum(p.numel() for p in build_network(spec.network).parameters()) == measured_with_3x
