"""Artifacts read from files are checked before use: contract schema, bundle layout and weights, stored values."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import only_contract
from export_test_helpers import tiny_network, tiny_spec

from sequifier.config.errors import UserError
from sequifier.data.stored_windows import StoredWindows
from sequifier.export.bundle import read_bundle, write_bundle
from sequifier.export.contract import build_contract, check_contract, decode
from sequifier.infer.checks import check_stored_values
from sequifier.infer.generation import run_batched


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[dict, Path]:
    """A generative contract and a PT bundle of the tiny network."""
    folder = tmp_path_factory.mktemp("exported")
    spec = tiny_spec(folder)
    network = tiny_network(spec)
    write_bundle(network, spec, folder / "tiny.pt", "best", 1)
    return build_contract(network, spec, "generative", "inactive"), folder / "tiny.pt"


def changed(contract: dict, change) -> dict:
    contract = copy.deepcopy(contract)
    change(contract)
    return contract


def deeper(contract: dict) -> None:
    node = contract
    for _ in range(12):
        node["extra"] = {}
        node = node["extra"]


def rename_target(name: str):
    """A change that renames the contract's categorical target everywhere the contract names it."""

    def change(contract: dict) -> None:
        for role in ("input_columns", "target_columns"):
            contract[role] = [name if column == "event" else column for column in contract[role]]
        contract["columns"][name] = contract["columns"].pop("event")
        contract["class_ids"][name] = contract["class_ids"].pop("event")

    return change


BAD_CONTRACTS = [
    ("no-known-keys", lambda c: c.clear() or c.update(a=1), "version is missing"),
    ("missing-key", lambda c: c.pop("target_columns"), "target_columns is missing"),
    ("wrong-type", lambda c: c.update(prediction_length=True), "prediction_length must be an integer"),
    ("unknown-artifact", lambda c: c.update(artifact="script"), "artifact must be one of"),
    ("duplicate-input", lambda c: c["input_columns"].append("event"), "distinct names"),
    ("undescribed-column", lambda c: c["columns"].pop("amount"), "no entry for 'amount'"),
    ("unknown-kind", lambda c: c["columns"]["amount"].update(kind="text"), "kind must be one of"),
    ("class-id-too-large", lambda c: c["class_ids"]["event"].append(99), "class ids below n_classes"),
    ("id-map-beyond-n-classes", lambda c: c["columns"]["event"]["id_map"].update(z=40), "needs at least 41"),
    ("n-classes-huge", lambda c: c["columns"]["event"].update(n_classes=2**40), "n_classes must be an integer"),
    ("statistics-not-numbers", lambda c: c["columns"]["amount"].update(statistics={"mean": "0"}), "statistics"),
    ("context-too-long", lambda c: c.update(context_length=2**30), "context_length must be from 1"),
    ("prediction-longer-than-context", lambda c: c.update(prediction_length=99), "prediction_length must be"),
    ("outputs-of-another-artifact", lambda c: c["outputs"].update(embedding="x"), "outputs must name"),
    ("future-version", lambda c: c.update(version=9), "version 9 is not supported"),
    ("target-offset-0", lambda c: c.update(target_offset=0), "target_offset must be at least 1, as training writes"),
    ("unknown-objective", lambda c: c.update(objective="masked"), "objective must be one of causal, got 'masked'"),
    ("nested-too-deeply", deeper, "nested deeper than"),
    ("target-named-like-a-path", rename_target("/tmp/escaped"), "'/tmp/escaped' holds a path separator"),
]


@pytest.mark.parametrize("case", BAD_CONTRACTS, ids=[c[0] for c in BAD_CONTRACTS])
def test_a_malformed_contract_names_the_file_and_the_field(case, exported):
    _, change, message = case
    with pytest.raises(UserError, match="malformed execution contract") as error:
        decode(json.dumps(changed(exported[0], change)), "m.onnx")
    assert error.value.where == "m.onnx" and message in error.value.problem


@pytest.mark.parametrize("text", ["{", "[" * 100_000 + "]" * 100_000, "x" * (64 * 2**20 + 1)])
def test_contract_text_that_is_no_json_or_too_deep_or_too_long_is_one_error(text):
    with pytest.raises(UserError, match="malformed execution contract"):
        decode(text, "m.onnx")


def test_the_exported_contract_passes(exported):
    check_contract(exported[0], "m.onnx")


def edited_bundle(source: Path, target: Path, change) -> Path:
    bundle = torch.load(source, weights_only=True)
    change(bundle)
    torch.save(bundle, target)
    return target


def first_matrix(bundle: dict) -> str:
    return next(name for name, tensor in bundle["model_state_dict"].items() if tensor.dim() == 2)


def wider(bundle: dict) -> None:
    bundle["model_config"]["network"]["backbone"]["architecture"]["dim_model"] = 2**20


BAD_BUNDLES = [
    ("extra-key", lambda b: b.update(optimizer={}), "unexpected ['optimizer']"),
    ("weights-not-tensors", lambda b: b.update(model_state_dict={"w": [1.0]}), "model_state_dict must map"),
    ("missing-weight", lambda b: b["model_state_dict"].pop(first_matrix(b)), "does not fit model_config"),
    ("extra-weight", lambda b: b["model_state_dict"].update(spare=torch.zeros(2)), "unexpected ['spare']"),
    ("nan-weights", lambda b: b["model_state_dict"][first_matrix(b)].fill_(float("nan")), "NaN or infinite"),
    ("huge-network-small-weights", wider, "does not fit model_config"),
    ("unknown-interface", lambda b: only_contract(b).update(interface="other"), "interface 'other'"),
    (
        "contract-columns-not-the-networks",
        lambda b: only_contract(b).update(target_columns=["amount"], class_ids={}, outputs={}),
        "outputs must name",
    ),
    (
        "network-of-wrong-values",
        lambda b: b["model_config"]["network"]["backbone"]["architecture"]["attention"].update(n_heads=3),
        "model_config",
    ),
]


@pytest.mark.parametrize("case", BAD_BUNDLES, ids=[c[0] for c in BAD_BUNDLES])
def test_a_malformed_bundle_is_one_error_naming_it(case, exported, tmp_path: Path):
    _, change, message = case
    path = edited_bundle(exported[1], tmp_path / "bad.pt", change)
    with pytest.raises(UserError) as error:
        read_bundle(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_stored_ids_outside_the_model_classes_are_refused_before_inference(exported):
    contract = exported[0]
    windows, width = 3, contract["context_length"] + 1
    columns = {name: np.full((windows, width), 3.0) for name in contract["input_columns"]}
    columns["event"] = columns["event"].astype(np.int64)
    columns["channel"] = columns["channel"].astype(np.int64)
    columns["event"][1, 2] = contract["columns"]["event"]["n_classes"]
    identifiers = [np.zeros(windows, dtype=np.int64)] * 6
    stored = StoredWindows(columns, *identifiers)
    with pytest.raises(UserError, match="the largest allowed id is 14") as error:
        check_stored_values(stored, Path("split.parquet"), contract, Path("m.onnx"))
    assert error.value.where == "event"
    columns["event"][1, 2] = 3
    columns["amount"][0, 0] = np.nan
    with pytest.raises(UserError, match="NaN or infinite") as error:
        check_stored_values(stored, Path("split.parquet"), contract, Path("m.onnx"))
    assert error.value.where == "amount"


class NanModel:
    path = Path("broken.onnx")
    contract: dict = {"prediction_length": 1}
    concurrency = 1
    positions = 1

    def __call__(self, inputs, left_pad_lengths):
        return {"amount": np.full((len(left_pad_lengths), self.positions), np.nan, dtype=np.float32)}


def test_a_model_computing_nan_is_refused_naming_it():
    with pytest.raises(UserError, match="NaN or infinite values for 'amount'") as error:
        run_batched(NanModel(), {"amount": np.zeros((4, 2), dtype=np.float32)}, np.zeros(4, dtype=np.int64), 2)
    assert error.value.where == "broken.onnx"


def test_a_model_computing_other_positions_than_its_contract_gives_is_refused_naming_it():
    model = NanModel()
    model.positions = 2
    with pytest.raises(UserError, match="computes 2 positions of 'amount' per view, but its execution contract gives"):
        run_batched(model, {"amount": np.zeros((4, 2), dtype=np.float32)}, np.zeros(4, dtype=np.int64), 2)
