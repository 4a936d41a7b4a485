"""`sequifier infer` on tampered artifacts and data: one line naming the file and the problem, exit code 2, nothing run.

Each case copies a freshly exported model (ONNX and PT bundle) and a stored split into a folder,
damages one thing, and runs the CLI as a user would.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from conftest import REFERENCE_DIR, only_contract, run_sequifier, write_yaml
from infer_helpers import BUNDLE, GENERATIVE, SPLIT, export_all

from sequifier.export.contract import CONTRACT_KEY

SHARDS = REFERENCE_DIR / "data" / "events_pt-split2"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("exported")
    export_all(folder)
    return folder / "models"


@pytest.fixture
def user(tmp_path: Path, exported: Path) -> Path:
    for model in (GENERATIVE, BUNDLE):
        shutil.copy(exported / model, tmp_path / model)
    shutil.copy(SPLIT, tmp_path / "windows.parquet")
    shutil.copytree(SHARDS, tmp_path / "shards")
    write_yaml(tmp_path / "onnx.yaml", {"model_path": GENERATIVE, "data_path": "windows.parquet"})
    write_yaml(tmp_path / "pt.yaml", {"model_path": BUNDLE, "data_path": "windows.parquet"})
    return tmp_path


def set_contract(path: Path, text: str) -> None:
    model = onnx.load(str(path))
    for prop in model.metadata_props:
        if prop.key == CONTRACT_KEY:
            prop.value = text
    onnx.save(model, str(path))


def break_metadata_text(path: Path) -> None:
    """One byte of the contract's text made invalid UTF-8, where the file still parses."""
    data = bytearray(path.read_bytes())
    data[data.find(b'"input_columns"') + 1] = 0xFF
    path.write_bytes(bytes(data))


def contract_with(path: Path, change) -> str:
    contract = json.loads({p.key: p.value for p in onnx.load(str(path)).metadata_props}[CONTRACT_KEY])
    change(contract)
    return json.dumps(contract)


def edit_bundle(path: Path, change) -> None:
    bundle = torch.load(path, weights_only=True)
    change(bundle)
    torch.save(bundle, path)


def first_matrix(bundle: dict) -> str:
    return next(name for name, tensor in bundle["model_state_dict"].items() if tensor.dim() == 2)


class RunsCode:
    """A pickle that would create a file if it were ever unpickled without weights_only."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def set_value(path: Path, column: str, value: float) -> None:
    table = pq.read_table(path)
    rows = np.flatnonzero(np.asarray(table.column("inputCol").to_pylist()) == column)
    values = table.column("0").to_numpy().copy()
    values[rows[0]] = value
    pq.write_table(table.set_column(table.schema.get_field_index("0"), "0", pa.array(values)), path)


def set_bookkeeping(path: Path, column: str, value: int) -> None:
    table = pq.read_table(path)
    values = table.column(column).to_numpy().copy()
    values[:] = value
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, pa.array(values)), path)


def flip_weight_bytes(path: Path) -> None:
    """Bytes inside the bundle's largest tensor inverted, as a damaged disk or copy would leave them."""
    with zipfile.ZipFile(path) as archive:
        largest = max(archive.infolist(), key=lambda info: info.file_size)
        data = bytearray(path.read_bytes())
        local = largest.header_offset
        name_length, extra_length = (
            int.from_bytes(data[local + 26 : local + 28], "little"),
            int.from_bytes(data[local + 28 : local + 30], "little"),
        )
        middle = local + 30 + name_length + extra_length + largest.file_size // 2
    data[middle : middle + 16] = bytes(255 - b for b in data[middle : middle + 16])
    path.write_bytes(bytes(data))


def swap_folder_categories(user: Path) -> None:
    path = user / "shards" / "metadata.json"
    described = json.loads(path.read_text())
    ids = described["id_maps"]["event"]
    first, second = sorted(ids)[:2]
    ids[first], ids[second] = ids[second], ids[first]
    path.write_text(json.dumps(described))


CASES = [
    ("contract-not-json", "onnx.yaml", GENERATIVE, lambda u: set_contract(u / GENERATIVE, "{not json"), "not JSON"),
    (
        "contract-nested-deeply",
        "onnx.yaml",
        GENERATIVE,
        lambda u: set_contract(u / GENERATIVE, "[" * 100_000 + "]" * 100_000),
        "nested too deeply",
    ),
    ("contract-not-utf8", "onnx.yaml", GENERATIVE, lambda u: break_metadata_text(u / GENERATIVE), "not UTF-8 text"),
    (
        "contract-missing-key",
        "onnx.yaml",
        GENERATIVE,
        lambda u: set_contract(u / GENERATIVE, contract_with(u / GENERATIVE, lambda c: c.pop("input_columns"))),
        "input_columns is missing",
    ),
    (
        "contract-wrong-type",
        "onnx.yaml",
        GENERATIVE,
        lambda u: set_contract(u / GENERATIVE, contract_with(u / GENERATIVE, lambda c: c.update(context_length="8"))),
        "context_length must be an integer",
    ),
    (
        "contract-id-beyond-classes",
        "onnx.yaml",
        GENERATIVE,
        lambda u: set_contract(
            u / GENERATIVE, contract_with(u / GENERATIVE, lambda c: c["columns"]["event"]["id_map"].update(zz=99))
        ),
        "needs at least 100",
    ),
    (
        "contract-context-length-not-the-graphs",
        "onnx.yaml",
        GENERATIVE,
        lambda u: set_contract(
            u / GENERATIVE, contract_with(u / GENERATIVE, lambda c: c.update(context_length=c["context_length"] + 4))
        ),
        "but its execution contract gives context_length",
    ),
    (
        "contract-prediction-length-not-the-graphs",
        "onnx.yaml",
        GENERATIVE,
        lambda u: set_contract(
            u / GENERATIVE,
            contract_with(u / GENERATIVE, lambda c: c.update(prediction_length=c["prediction_length"] + 1)),
        ),
        "the file is damaged",
    ),
    (
        "bundle-contract-context-length-not-the-networks",
        "pt.yaml",
        BUNDLE,
        lambda u: edit_bundle(u / BUNDLE, lambda b: only_contract(b).update(context_length=3)),
        "the contract's context_length 3 is not model_config's",
    ),
    (
        "bundle-random-bytes",
        "pt.yaml",
        BUNDLE,
        lambda u: (u / BUNDLE).write_bytes(np.random.default_rng(7).bytes(4096)),
        "not a readable PT bundle",
    ),
    (
        "bundle-not-a-pickle",
        "pt.yaml",
        BUNDLE,
        lambda u: (u / BUNDLE).write_bytes(b"\x80\x02}q\x00(X\x01\x00\x00\x00a" + b"\xff" * 64),
        "unpickling",
    ),
    ("bundle-flipped-bytes", "pt.yaml", BUNDLE, lambda u: flip_weight_bytes(u / BUNDLE), "fails its checksum"),
    (
        "bundle-cut-short",
        "pt.yaml",
        BUNDLE,
        lambda u: (u / BUNDLE).write_bytes((u / BUNDLE).read_bytes()[: (u / BUNDLE).stat().st_size // 2]),
        "the archive is cut short or damaged",
    ),
    (
        "bundle-missing-key",
        "pt.yaml",
        BUNDLE,
        lambda u: edit_bundle(u / BUNDLE, lambda b: b.pop("model_config")),
        "missing ['model_config']",
    ),
    (
        "bundle-mismatched-weights",
        "pt.yaml",
        BUNDLE,
        lambda u: edit_bundle(u / BUNDLE, lambda b: b["model_state_dict"].update({first_matrix(b): torch.zeros(3, 3)})),
        "has shape [3, 3]",
    ),
    (
        "bundle-malformed-contract",
        "pt.yaml",
        BUNDLE,
        lambda u: edit_bundle(u / BUNDLE, lambda b: only_contract(b).pop("outputs")),
        "outputs is missing",
    ),
    (
        "stored-id-beyond-the-model-classes",
        "onnx.yaml",
        "windows.parquet",
        lambda u: set_value(u / "windows.parquet", "event", 99.0),
        "the largest allowed id is 14",
    ),
    (
        "stored-real-beyond-float32",
        "onnx.yaml",
        "windows.parquet",
        lambda u: set_value(u / "windows.parquet", "amount", -1e300),
        "holds the value -1e+300 (as stored), beyond the float32 range",
    ),
    (
        "stored-padding-beyond-the-window",
        "onnx.yaml",
        "windows.parquet",
        lambda u: set_bookkeeping(u / "windows.parquet", "leftPadLength", 500),
        "leftPadLength 500; it must be 0 to",
    ),
    (
        "stored-negative-padding",
        "onnx.yaml",
        "windows.parquet",
        lambda u: set_bookkeeping(u / "windows.parquet", "leftPadLength", -3),
        "leftPadLength -3",
    ),
    (
        "stored-split-ending-before-the-window",
        "onnx.yaml",
        "windows.parquet",
        lambda u: set_bookkeeping(u / "windows.parquet", "splitEndItemPosition", -1),
        "at most the window's splitEndItemPosition",
    ),
]


def test_a_shard_folder_written_with_other_categories_is_refused(user: Path):
    swap_folder_categories(user)
    write_yaml(user / "shards.yaml", {"model_path": GENERATIVE, "data_path": "shards", "read_format": "pt"})
    result = run_sequifier(["infer", "--config-path", "shards.yaml"], user)
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "id_maps.event" in line and str(user / "shards" / "metadata.json") in line, line
    assert not (user / "outputs").exists()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_damaged_artifact_is_one_line_naming_the_file(case, user: Path):
    _, config, named, damage, message = case
    damage(user)
    result = run_sequifier(["infer", "--config-path", config], user)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr
    assert named in lines[0] and message in lines[0], lines[0]
    assert not (user / "outputs").exists()


@pytest.mark.parametrize("target", ["bundle", "shard"])
def test_a_pickle_that_runs_code_is_reported_as_an_unpickling_error_and_never_runs(target, user: Path):
    marker = user / "code-ran"
    if target == "bundle":
        torch.save({"artifact_type": RunsCode(marker)}, user / BUNDLE)
        args = ["infer", "--config-path", "pt.yaml"]
        named = BUNDLE
    else:
        shard = sorted((user / "shards").glob("*.pt"))[0]
        torch.save({"format": RunsCode(marker)}, shard)
        args = ["infer", "--config-path", "onnx.yaml", "--data-path", "shards"]
        named = shard.name
    result = run_sequifier(args, user)
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line and named in line and "unpickling with weights_only=True failed" in line
    assert "posix.system" in line
    assert not marker.exists()
