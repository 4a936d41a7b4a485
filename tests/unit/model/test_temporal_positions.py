"""Temporal positions: per feature at the leaf ingestion branches, or global in the backbone."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import REFERENCE_DIR, tiny_train_config
from torch import nn

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.model.network import build_network

CONTEXT = 8
ARCH = "model.backbone.architecture"


def network(
    position: str, scope: str | None = None, max_context_length: int | None = None, ingestion: dict | None = None
):
    config = tiny_train_config()
    architecture = config["model"]["backbone"]["architecture"]
    architecture["position_encoding"] = {"type": position}
    if scope is not None:
        architecture["positional_encoding_scope"] = scope
    if max_context_length is not None:
        architecture["max_context_length"] = max_context_length
    if ingestion is not None:
        config["model"]["interface"]["ingestion"] = ingestion
    spec = resolve(canonical_config(config), run_dir=Path("."), cwd=REFERENCE_DIR)
    torch.manual_seed(0)
    return build_network(spec.network).eval()


def position_tables(module: nn.Module) -> dict[str, tuple[int, ...]]:
    return {name: tuple(p.shape) for name, p in module.named_parameters() if "position" in name}


def test_learned_positions_default_to_a_table_per_input_column_of_context_length_rows():
    built = network("learned", max_context_length=32)
    ingestion = built.interfaces["default"].ingestion
    assert {name: tuple(table.weight.shape) for name, table in ingestion.positions.items()} == {
        "event": (CONTEXT, 8),
        "channel": (CONTEXT, 4),
        "amount": (CONTEXT, 4),
    }
    assert position_tables(built.backbone) == {}


def test_a_per_feature_position_is_added_to_its_columns_embedding_at_each_slot():
    ingestion = network("learned").interfaces["default"].ingestion
    inputs = {
        "event": torch.full((1, CONTEXT), 5),
        "channel": torch.full((1, CONTEXT), 3),
        "amount": torch.zeros(1, CONTEXT),
    }
    with torch.no_grad():
        output = ingestion(inputs)[0]
        event_part = output[:, :8]
        expected = ingestion.embeddings["event"].weight[5] + ingestion.positions["event"].weight
    torch.testing.assert_close(event_part, expected)
    assert not torch.allclose(output[0], output[1])


def test_global_scope_puts_one_learned_table_of_max_context_length_rows_in_the_backbone():
    built = network("learned", scope="global", max_context_length=32)
    assert position_tables(built.backbone) == {"position.position.weight": (32, 16)}
    assert position_tables(built.interfaces["default"]) == {}


@pytest.mark.parametrize("scope", [None, "global"])
def test_sinusoidal_positions_are_global_and_have_no_parameters(scope):
    built = network("sinusoidal", scope=scope)
    assert position_tables(built) == {}
    assert not isinstance(built.backbone.position, nn.Identity)


def test_sinusoidal_positions_per_feature_are_refused_with_the_field_path():
    with pytest.raises(UserError, match=rf"{ARCH}\.positional_encoding_scope: sinusoidal positions are fixed"):
        network("sinusoidal", scope="per_feature")


@pytest.mark.parametrize("scope", [None, "per_feature", "global"])
def test_rope_adds_no_position_table_whatever_the_scope(scope):
    built = network("rope", scope=scope)
    assert position_tables(built) == {}
    assert built.backbone.layers[0].attention.rotary is not None


def test_per_feature_positions_live_in_composite_leaves_not_in_merges():
    composite = {
        "type": "composite",
        "merge": {"type": "sum"},
        "output_dim": 16,
        "branches": {
            "categories": {
                "type": "embedding",
                "columns": ["event", "channel"],
                "output_dim": 12,
                "feature_embedding_dims": {"event": 8, "channel": 4},
            },
            "amount": {"type": "embedding", "columns": ["amount"], "output_dim": 6},
        },
    }
    ingestion = network("learned", ingestion=composite).interfaces["default"].ingestion
    assert position_tables(ingestion) == {
        "branches.categories.positions.event.weight": (CONTEXT, 8),
        "branches.categories.positions.channel.weight": (CONTEXT, 4),
        "branches.amount.positions.amount.weight": (CONTEXT, 6),
    }
