"""Ingestion-level dropout: applied to a leaf branch's output, accepted and not applied by a composite node."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import REFERENCE_DIR, tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.model.network import build_network

CATEGORY_WIDTHS = {"event": 8, "channel": 4}
INPUTS = {"event": torch.randint(3, 15, (64, 8)), "channel": torch.randint(3, 6, (64, 8)), "amount": torch.randn(64, 8)}


def ingestion(node: dict):
    config = tiny_train_config()
    config["model"]["interface"]["ingestion"] = node
    spec = resolve(canonical_config(config), run_dir=Path("."), cwd=REFERENCE_DIR)
    torch.manual_seed(0)
    return build_network(spec.network).interfaces["default"].ingestion


def leaf(dropout: float | None = None, **fields) -> dict:
    widths = {"event": 8, "channel": 4, "amount": 4}
    node = {"type": "embedding", "output_dim": 16, "feature_embedding_dims": widths, **fields}
    return node if dropout is None else {**node, "dropout": dropout}


def zero_share(output: torch.Tensor) -> float:
    return (output == 0).float().mean().item()


def test_a_leaf_drops_out_its_output_in_training_only():
    module = ingestion(leaf(0.5))
    with torch.no_grad():
        evaluated = module.eval()(INPUTS)
        trained = module.train()(INPUTS)
    assert zero_share(evaluated) == 0.0
    assert 0.4 < zero_share(trained) < 0.6
    kept = trained != 0
    torch.testing.assert_close(trained[kept], 2 * evaluated[kept])


def test_leaf_dropout_defaults_to_none():
    module = ingestion(leaf()).train()
    with torch.no_grad():
        assert zero_share(module(INPUTS)) == 0.0


def test_a_composite_accepts_dropout_and_applies_nothing():
    composite = {
        "type": "composite",
        "dropout": 0.5,
        "merge": {"type": "concat"},
        "branches": {
            "categories": leaf(columns=["event", "channel"], output_dim=12, feature_embedding_dims=CATEGORY_WIDTHS),
            "amount": leaf(columns=["amount"], output_dim=4, feature_embedding_dims={"amount": 4}),
        },
    }
    module = ingestion(composite)
    with torch.no_grad():
        torch.testing.assert_close(module.train()(INPUTS), module.eval()(INPUTS))


def test_a_branch_inside_a_composite_drops_out_only_its_own_part():
    composite = {
        "type": "composite",
        "merge": {"type": "concat"},
        "branches": {
            "categories": leaf(columns=["event", "channel"], output_dim=12, feature_embedding_dims=CATEGORY_WIDTHS),
            "amount": leaf(0.5, columns=["amount"], output_dim=4, feature_embedding_dims={"amount": 4}),
        },
    }
    module = ingestion(composite).train()
    with torch.no_grad():
        output = module(INPUTS)
    assert zero_share(output[..., :12]) == 0.0
    assert zero_share(output[..., 12:]) > 0.3
