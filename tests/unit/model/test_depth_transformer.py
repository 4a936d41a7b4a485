"""The depth_transformer ingestion: a masked transformer across each item's child slots, pooled at its CLS."""

from __future__ import annotations

import copy

import pytest
import torch
from depth_helpers import depth_batch, depth_spec, depth_train_config, subitems

from sequifier.config.errors import UserError
from sequifier.model.ingestion.depth import DepthTransformerIngestion
from sequifier.model.network import build_network
from sequifier.model.parameters import parameter_groups

MASK = "depth_valid_masks.subitems"


def depth_branch(changes: dict | None = None, architecture: dict | None = None, backbone: dict | None = None):
    config = depth_train_config()
    subitems(config).update(changes or {})
    subitems(config)["architecture"].update(architecture or {})
    config["model"]["backbone"]["architecture"].update(backbone or {})
    network = build_network(depth_spec(config).network).eval()
    return network, network.interfaces["default"].ingestion.branches["subitems"]


def test_invalid_slots_never_reach_the_output():
    _, branch = depth_branch()
    inputs = depth_batch()
    noisy = dict(inputs)
    invalid = ~inputs[MASK]
    noisy["subitemAmount"] = (
        torch.where(invalid, torch.full_like(inputs["subitemAmount"], float("nan")), 0.0) + (inputs["subitemAmount"])
    )
    noisy["subitemType"] = torch.where(invalid, torch.full_like(inputs["subitemType"], 999), inputs["subitemType"])
    with torch.no_grad():
        torch.testing.assert_close(branch(noisy), branch(inputs), atol=0, rtol=0)


def test_every_valid_child_counts():
    _, branch = depth_branch()
    inputs = depth_batch()
    changed = dict(inputs)
    changed["subitemAmount"] = inputs["subitemAmount"].clone()
    changed["subitemAmount"][0, 5, 0] += 1.0  # the first child of one item
    with torch.no_grad():
        difference = (branch(changed) - branch(inputs)).abs().sum(dim=-1)
    assert difference[0, 5] > 0
    difference[0, 5] = 0
    assert difference.max() == 0  # items are encoded independently of each other


def test_empty_collections_share_a_learned_cls_only_representation():
    _, branch = depth_branch()
    inputs = depth_batch()
    inputs[MASK][1, 7] = False  # an empty collection at a real time step; slots 0-1 are padding (all false)
    with torch.no_grad():
        out = branch(inputs)
        torch.testing.assert_close(out[0, 0], out[1, 7], atol=1e-6, rtol=0)
        torch.testing.assert_close(out[2, 1], out[1, 7], atol=1e-6, rtol=0)
        branch.cls.add_(1.0)
        assert not torch.allclose(branch(inputs)[1, 7], out[1, 7])


def test_cls_is_position_zero_and_slot_s_position_s_plus_one():
    _, branch = depth_branch()
    assert branch.position.position.weight.shape[0] == 8 + 1
    inputs = depth_batch()
    with torch.no_grad():
        before = branch(inputs)
        branch.position.position.weight[0].add_(1.0)  # only the CLS reads row 0
        only_cls = branch(inputs)
        branch.position.position.weight[0].sub_(1.0)
        branch.position.position.weight[8].add_(1.0)  # row 8 is slot 7, which no item here fills
        unused = branch(inputs)
    assert not torch.allclose(only_cls, before)
    torch.testing.assert_close(unused, before, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "architecture",
    [
        {"position_encoding": {"type": "rope"}, "attention": {"type": "mha", "n_heads": 2}},
        {"position_encoding": {"type": "sinusoidal"}, "attention": {"type": "mqa", "n_heads": 4}},
        {
            "normalization": {"type": "layernorm", "norm_first": False},
            "feed_forward": {"dim": 24, "activation": "gelu"},
        },
        {"feed_forward": {"dim": 24, "activation": "relu"}, "num_layers": 3, "shared_layer_groups": [[0, 2]]},
        {"feed_forward": {"dim": 24, "activation": "geglu"}},
        {"feed_forward": {"dim": 24, "activation": "silu"}},
    ],
    ids=["rope-mha", "sinusoidal-mqa", "layernorm-postnorm-gelu", "relu-shared-layers", "geglu", "silu"],
)
def test_architecture_options_build_and_train(architecture):
    network, branch = depth_branch(architecture=architecture)
    network.train()
    out = network("default", depth_batch(), None)["nextAction"]
    out.sum().backward()
    assert out.shape == (4, 16, 4)
    assert all(p.grad is not None for p in branch.parameters())
    if architecture.get("shared_layer_groups"):
        assert branch.layers[0] is branch.layers[2]


def test_projections_exist_only_where_widths_differ():
    _, projected = depth_branch({"feature_embedding_dims": {"subitemType": 7, "subitemAmount": 3}, "output_dim": 24})
    assert (projected.input_projection.in_features, projected.input_projection.out_features) == (10, 16)
    assert (projected.output_projection.in_features, projected.output_projection.out_features) == (16, 24)
    _, direct = depth_branch({"output_dim": 16})
    assert isinstance(direct.input_projection, torch.nn.Identity)
    assert isinstance(direct.output_projection, torch.nn.Identity)


def test_dropout_sites():
    network, branch = depth_branch({"dropout": 0.3}, architecture={"dropout": 0.2})
    assert branch.dropout.p == 0.3 and branch.position_dropout.p == 0.2
    assert branch.layers[0].dropout.p == 0.2 and branch.layers[0].attention.dropout == 0.2
    inputs = depth_batch()
    with torch.no_grad():
        assert torch.equal(branch.eval()(inputs), branch(inputs))
        assert not torch.equal(branch.train()(inputs), branch(inputs))


def test_parameter_groups_of_the_depth_branch():
    network, _ = depth_branch({"feature_embedding_dims": {"subitemType": 7, "subitemAmount": 3}})
    groups = {
        name.removeprefix("interfaces.default.ingestion.branches.subitems."): group
        for name, group in parameter_groups(network).items()
        if ".subitems." in name
    }
    assert groups["cls"] == "free_parameter"
    assert groups["embeddings.subitemType.weight"] == "embedding.categorical"
    assert groups["embeddings.subitemAmount.weight"] == "embedding.real"
    assert groups["input_projection.weight"] == groups["output_projection.weight"] == "ingestion.output_projection"
    assert groups["position.position.weight"] == "position"
    assert groups["layers.0.attention.qkv.weight"] == "attention.qkv"
    assert groups["final_norm.weight"] == "normalization"


def test_learned_per_feature_backbone_positions_add_a_temporal_table_to_the_depth_leaf():
    _, branch = depth_branch(backbone={"position_encoding": {"type": "learned"}})
    assert branch.temporal_positions.weight.shape == (16, 24)  # context_length rows of the branch's output width
    _, rope = depth_branch()
    assert rope.temporal_positions is None


def test_homogeneous_categorical_children_share_the_depth_width():
    config = depth_train_config()
    config["model"]["interface"]["input_columns"] = ["accountType", "subitemType"]
    branch = subitems(config)
    branch["columns"] = ["subitemType"]
    del branch["feature_embedding_dims"]
    module = build_network(depth_spec(config).network).interfaces["default"].ingestion.branches["subitems"]
    assert isinstance(module, DepthTransformerIngestion)
    assert module.embeddings["subitemType"].embedding_dim == 16


def refused(change) -> UserError:
    config = depth_train_config()
    change(config)
    with pytest.raises(UserError) as error:
        depth_spec(config)
    return error.value


def test_a_deep_target_is_refused():
    def deep_target(config):
        config["model"]["interface"]["target_columns"] = ["nextAction", "subitemType"]
        config["dataset"]["criterion"]["subitemType"] = "CrossEntropyLoss"

    error = refused(deep_target)
    assert error.where == "model.interfaces.default.target_columns"
    assert "deep targets are not supported" in error.problem


def test_a_flat_branch_cannot_read_a_deep_column():
    def flat(config):
        config["model"]["interface"]["ingestion"]["branches"]["item"]["columns"] = ["accountType", "subitemType"]
        config["model"]["interface"]["ingestion"]["allow_shared_columns"] = True

    error = refused(flat)
    assert error.where == "model.interfaces.default.ingestion.branches.item.columns"
    assert "cannot read depth features" in error.problem


def test_a_depth_branch_reads_its_layout_only():
    def shallow_in_depth(config):
        subitems(config)["columns"] = ["subitemType", "subitemAmount", "accountType"]
        subitems(config)["feature_embedding_dims"] = {"subitemType": 8, "subitemAmount": 4, "accountType": 4}
        config["model"]["interface"]["ingestion"]["allow_shared_columns"] = True

    error = refused(shallow_in_depth)
    assert error.where == "model.interfaces.default.ingestion.branches.subitems.columns"
    assert "accountType is not in depth layout 'subitems'" in error.problem
    unknown = refused(lambda config: subitems(config).update(layout="subitem"))
    assert unknown.where.endswith("subitems.layout") and "not a depth layout" in unknown.problem


def test_deep_inputs_need_pt_shards():
    error = refused(lambda config: config["global_training"].update(read_format="parquet"))
    assert error.where == "global_training.read_format"


def test_a_depth_architecture_has_no_temporal_context_settings():
    config = depth_train_config()
    subitems(config)["architecture"]["max_context_length"] = 9
    with pytest.raises(UserError, match=r"subitems\.architecture\.max_context_length: does not apply"):
        depth_spec(copy.deepcopy(config))
