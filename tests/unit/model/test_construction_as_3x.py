"""Construction rules taken from sequifier 3.x: embedding widths, decoder vocabulary and width, biases, merges.

The widths and vocabularies asserted here are what 3.1.1.0 built for the same columns and
settings (read from the state dicts of the models it wrote).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import REFERENCE_DIR, tiny_train_config
from torch import nn

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec
from sequifier.config.resolve import resolve
from sequifier.model.ingestion.composite import BranchMerge
from sequifier.model.ingestion.embedding import feature_widths
from sequifier.model.network import build_network

CARDINALITIES = [
    ColumnSpec("small", "categorical", 7),
    ColumnSpec("medium", "categorical", 43),
    ColumnSpec("large", "categorical", 153),
]


@pytest.mark.parametrize(
    "output_dim, widths_in_3x", [(32, [7, 11, 14]), (29, [6, 10, 13]), (18, [4, 6, 8]), (7, [2, 2, 3])]
)
def test_categorical_widths_follow_log_cardinality_with_two_each_at_least(output_dim, widths_in_3x):
    widths = feature_widths(CARDINALITIES, output_dim, None, "ingestion")
    assert list(widths.values()) == widths_in_3x
    assert sum(widths.values()) == output_dim


def test_categorical_columns_need_two_positions_each():
    message = r"ingestion\.output_dim: 5 must be at least twice the number of categorical input columns \(3\)"
    with pytest.raises(UserError, match=message):
        feature_widths(CARDINALITIES, 5, None, "ingestion")


def test_real_columns_share_the_width_evenly_first_ones_wider():
    reals = [ColumnSpec("x", "real"), ColumnSpec("y", "real")]
    assert feature_widths(reals, 31, None, "ingestion") == {"x": 16, "y": 15}


def build(interface: dict | None = None, decoder: dict | None = None):
    config = tiny_train_config()
    config["model"]["interface"].update(interface or {})
    config["model"]["interface"]["decoder"].update(decoder or {})
    spec = resolve(canonical_config(config), run_dir=Path("."), cwd=REFERENCE_DIR)
    torch.manual_seed(0)
    return build_network(spec.network)


def test_an_unlisted_categorical_target_predicts_other_but_not_unknown_or_mask():
    decoder = build().interfaces["default"].decoder
    ids = decoder.class_ids("event").tolist()
    assert 1 in ids and 0 not in ids and 2 not in ids
    assert decoder.heads["event"].out_features == len(ids)


@pytest.mark.parametrize(
    "listed, special_ids", [([], set()), (["unknown", "other", "mask"], {0, 1, 2}), (["mask"], {2})]
)
def test_listed_special_tokens_are_exactly_the_predictable_ones(listed, special_ids):
    decoder = build({"categorical_decoder_special_tokens": {"event": listed}}).interfaces["default"].decoder
    assert set(decoder.class_ids("event").tolist()) & {0, 1, 2} == special_ids


@pytest.mark.parametrize("decoder_config", [{"support": 3}, {"type": "mlp", "support": 2, "hidden_dims": [24]}])
def test_the_decoder_reads_support_states_at_once(decoder_config):
    decoder = build(decoder=decoder_config).interfaces["default"].decoder
    first = decoder.hidden[0] if len(decoder.hidden) else decoder.heads["event"]
    assert first.in_features == decoder_config["support"] * 16


@pytest.mark.parametrize("activation, module", [(None, nn.ReLU), ("gelu", nn.GELU), ("silu", nn.SiLU)])
def test_mlp_decoder_hidden_activation_defaults_to_relu(activation, module):
    decoder_config = {"type": "mlp", "hidden_dims": [24, 12]} | ({"activation": activation} if activation else {})
    hidden = build(decoder=decoder_config).interfaces["default"].decoder.hidden
    assert all(isinstance(m, nn.Linear) for m in hidden[0::2]) and [type(m) for m in hidden[1::2]] == [module] * 2


def test_a_linear_decoder_refuses_an_activation():
    with pytest.raises(UserError, match=r"decoder\.activation: only an mlp decoder has an activation"):
        build(decoder={"activation": "gelu"})


def test_attention_projections_have_no_biases():
    attention = build().backbone.layers[0].attention
    assert attention.qkv.bias is None and attention.output.bias is None


def test_gated_and_attention_merges_add_a_gate_or_a_query_to_the_projections_of_differing_branches():
    gated = BranchMerge({"wide": 24, "narrow": 8}, "gated", 24)
    assert set(gated.projections) == {"wide", "narrow"} and isinstance(gated.projections["wide"], nn.Identity)
    assert gated.gate.weight.shape == (2, 48) and gated.gate.bias.shape == (2,)
    attention = BranchMerge({"wide": 24, "narrow": 8}, "attention", 24)
    assert attention.query.shape == (24,)


def test_merge_weights_are_a_softmax_over_the_branches():
    merge = BranchMerge({"a": 4, "b": 4, "c": 4}, "attention", 4)
    outputs = {name: torch.randn(2, 3, 4) for name in "abc"}
    with torch.no_grad():
        torch.testing.assert_close(merge(outputs), sum(outputs.values()) / 3)  # a zero query weighs them alike
        merge.query.copy_(torch.tensor([50.0, 0.0, 0.0, 0.0]))
        outputs["b"][..., 0] = 10.0
        torch.testing.assert_close(merge(outputs), outputs["b"])
