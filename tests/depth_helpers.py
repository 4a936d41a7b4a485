"""Helpers of the depth-encoder tests: the reference-v3-depth project and the guide's depth model, scaled down."""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from conftest import REFERENCE_DIR

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import RunSpec, resolve

DEPTH_DIR = REFERENCE_DIR.parent / "reference-v3-depth"
DEPTH_METADATA = "configs/metadata_configs/items.json"

# The train guide's depth example (section "Depth encoders and nested composites") at a quarter of its widths.
GUIDE_DEPTH_MODEL = {
    "backbone": {
        "initialization_seed": 20260910,
        "architecture": {
            "dim_model": 32,
            "max_context_length": 32,
            "num_layers": 2,
            "attention": {"type": "mha", "n_heads": 4},
            "feed_forward": {"dim": 64, "activation": "swiglu"},
            "position_encoding": {"type": "rope"},
        },
    },
    "interface": {
        "input_columns": ["accountType", "subitemType", "subitemAmount"],
        "target_columns": ["nextAction"],
        "ingestion": {
            "type": "composite",
            "branches": {
                "item": {"type": "embedding", "columns": ["accountType"], "output_dim": 8},
                "subitems": {
                    "type": "depth_transformer",
                    "layout": "subitems",
                    "columns": ["subitemType", "subitemAmount"],
                    "feature_embedding_dims": {"subitemType": 12, "subitemAmount": 4},
                    "output_dim": 24,
                    "dropout": 0.1,
                    "initialization_seed": 12345,
                    "initialization": {
                        "attention.qkv": {"weight": {"method": "xavier_uniform", "gain": 1.0}},
                        "free_parameter": {"weight": {"method": "normal", "mean": 0.0, "std": 0.02}},
                    },
                    "architecture": {
                        "dim_model": 16,
                        "num_layers": 2,
                        "attention": {"type": "gqa", "n_heads": 4, "n_kv_heads": 2},
                        "feed_forward": {"dim": 32, "activation": "swiglu"},
                        "normalization": {"type": "rmsnorm", "norm_first": True},
                        "position_encoding": {"type": "learned"},
                        "dropout": 0.1,
                    },
                },
            },
            "merge": {"type": "concat"},
        },
        "decoder": {"type": "linear", "prediction_length": 1},
    },
}


def depth_train_config(**top_level) -> dict:
    """A singleton train config of the scaled-down guide depth model on the reference-v3-depth metadata."""
    config = {
        "project_root": ".",
        "model_name": "depth",
        "device": "cpu",
        "seed": 1010,
        "global_training": {
            "read_format": "pt",
            "context_length": 16,
            "batch_size": 16,
            "inference_batch_size": 32,
            "learning_rate": 0.003,
        },
        "model": copy.deepcopy(GUIDE_DEPTH_MODEL),
        "dataset": {
            "part": {"metadata_config_path": DEPTH_METADATA},
            "criterion": {"nextAction": "CrossEntropyLoss"},
        },
        "training_plan": {"epochs": 1},
        "evaluation": True,
    }
    config.update(top_level)
    return config


def subitems(config: dict) -> dict:
    """The depth_transformer branch of a depth_train_config."""
    return config["model"]["interface"]["ingestion"]["branches"]["subitems"]


def depth_spec(config: dict | None = None, run_dir: Path = Path(".")) -> RunSpec:
    """A depth config resolved against the reference-v3-depth metadata (read only)."""
    return resolve(canonical_config(copy.deepcopy(config or depth_train_config())), run_dir=run_dir, cwd=DEPTH_DIR)


def depth_batch(batch: int = 4, length: int = 16, capacity: int = 8, seed: int = 3) -> dict[str, torch.Tensor]:
    """Random inputs of the depth interface: 1-5 children per item, two padded outer slots at the start."""
    generator = torch.Generator().manual_seed(seed)
    children = torch.randint(1, 6, (batch, length), generator=generator)
    valid = torch.arange(capacity)[None, None, :] < children[..., None]
    valid[:, :2] = False
    return {
        "accountType": torch.randint(3, 6, (batch, length), generator=generator),
        "subitemType": torch.where(valid, torch.randint(3, 7, (batch, length, capacity), generator=generator), 0),
        "subitemAmount": torch.where(valid, torch.randn(batch, length, capacity, generator=generator), 0.0),
        "depth_valid_masks.subitems": valid,
    }
