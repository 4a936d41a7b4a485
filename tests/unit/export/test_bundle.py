"""PT inference bundles: exactly the listed keys and plain data under weights_only.

A network is rebuilt from model_config alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import only_contract
from export_test_helpers import example_batch, tiny_network, tiny_spec

from sequifier.config.errors import UserError
from sequifier.export.bundle import BUNDLE_KEYS, read_bundle, write_bundle

PLAIN = (dict, list, str, int, float, bool, type(None))


def _walk(value, path="") -> list[tuple[str, object]]:
    items = [(path, value)]
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), path
            items += _walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            items += _walk(item, f"{path}[{index}]")
    return items


def test_bundle_holds_exactly_the_listed_keys_as_plain_data(tmp_path: Path):
    spec = tiny_spec(tmp_path, architecture={"num_layers": 2})
    path = tmp_path / "models" / "tiny-best-3.pt"
    write_bundle(tiny_network(spec), spec, path, "best", 3)
    bundle = torch.load(path, weights_only=True)
    assert (
        sorted(bundle)
        == sorted(BUNDLE_KEYS)
        == ["artifact_type", "export_metadata", "format_version", "model_config", "model_state_dict"]
    )
    assert bundle["artifact_type"] == "sequifier_inference_bundle" and bundle["format_version"] == 3
    assert all(isinstance(v, torch.Tensor) for v in bundle["model_state_dict"].values())
    for section in ("model_config", "export_metadata"):
        for where, value in _walk(bundle[section], section):
            assert isinstance(value, PLAIN), (where, type(value))
            assert not (isinstance(value, str) and str(tmp_path) in value), f"{where} holds a path"
    config = bundle["model_config"]
    assert sorted(config) == ["contracts", "network"]
    assert sorted(config["network"]) == ["backbone", "context_length", "interfaces"]
    assert list(config["contracts"]) == list(config["network"]["interfaces"])
    contract = only_contract(bundle)
    assert contract["artifact"] == "network" and contract["dropout"] == "selectable"
    for forbidden in (
        "optimizer",
        "dataset_training",
        "training_plan",
        "evaluation",
        "parts",
        "metadata_config_path",
        "initialization",
    ):
        assert not any(
            where.endswith(f".{forbidden}") and value is not None for where, value in _walk(config, "model_config")
        ), forbidden
    metadata = bundle["export_metadata"]
    assert metadata["trace_sites"] == [
        "interfaces.default.ingestion",
        "interfaces.default.adapter",
        "backbone.position",
        "backbone.layers.0",
        "backbone.layers.1",
        "backbone.final_norm",
        "interfaces.default.decoder",
    ]
    assert {"sequifier_version", "torch_version", "model_name", "kind", "epoch", "exported_at"} <= set(
        metadata["provenance"]
    )
    assert (metadata["provenance"]["kind"], metadata["provenance"]["epoch"]) == ("best", 3)


def test_rebuilt_network_computes_what_the_exported_one_did(tmp_path: Path):
    spec = tiny_spec(
        tmp_path,
        architecture={
            "num_layers": 3,
            "shared_layer_groups": [[0, 2]],
            "attention": {"type": "gqa", "n_heads": 4, "n_kv_heads": 2},
        },
    )
    network = tiny_network(spec)
    path = tmp_path / "model.pt"
    write_bundle(network, spec, path, "last", 1)
    rebuilt, contract, metadata = read_bundle(str(path))  # the path as text, as a user of the API may give it
    assert not rebuilt.training
    assert rebuilt.backbone.layers[0] is rebuilt.backbone.layers[2]
    for site in metadata["trace_sites"]:
        rebuilt.get_submodule(site)
    inputs, padding = example_batch(spec)
    with torch.no_grad():
        expected = network(spec.interface_name, inputs, padding)
        got = rebuilt(contract["interface"], inputs, padding)
    for target in expected:
        torch.testing.assert_close(got[target], expected[target], atol=0, rtol=0)


def test_a_file_that_is_not_a_bundle_is_refused(tmp_path: Path):
    path = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(UserError, match="not a sequifier PT inference bundle"):
        read_bundle(path)
    path.write_text("not a zip")
    with pytest.raises(UserError, match="not a readable PT bundle"):
        read_bundle(path)


def test_a_format_2_bundle_of_the_previous_release_still_reads(tmp_path: Path):
    spec = tiny_spec(tmp_path)
    path = tmp_path / "model.pt"
    write_bundle(tiny_network(spec), spec, path, "last", 1)
    bundle = torch.load(path, weights_only=True)
    contract = only_contract(bundle)
    bundle["format_version"] = 2
    bundle["model_config"] = {"network": bundle["model_config"]["network"], "contract": contract}
    torch.save(bundle, path)
    _, read, _ = read_bundle(path, spec.interface_name)
    assert read == contract
    with pytest.raises(UserError, match="'other' is not an interface"):
        read_bundle(path, "other")
