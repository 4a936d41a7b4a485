"""An exported ONNX model carries its graph's digest; infer refuses a model whose nodes or weights changed since."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import onnx
import pytest
from export_test_helpers import tiny_network, tiny_spec

from sequifier.config.errors import UserError
from sequifier.export.graph_digest import GRAPH_DIGEST_KEY, MalformedModel, graph_digest
from sequifier.export.onnx import export_onnx
from sequifier.infer.onnx_model import OnnxModel

CHANGED = "is damaged: its graph (nodes and weights) is not the one exported"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("digest")
    spec = tiny_spec(folder)
    path = folder / "model.onnx"
    export_onnx(tiny_network(spec), spec, path)
    return path


def copy_of(exported: Path, tmp_path: Path) -> Path:
    path = tmp_path / exported.name
    path.write_bytes(exported.read_bytes())
    return path


def test_the_recorded_digest_is_the_sha256_of_the_stored_graph(exported: Path):
    proto = onnx.load(str(exported))
    recorded = {entry.key: entry.value for entry in proto.metadata_props}[GRAPH_DIGEST_KEY]
    assert recorded == hashlib.sha256(proto.graph.SerializeToString()).hexdigest()
    assert OnnxModel(exported).contract["artifact"] == "generative"


def test_a_weight_changed_inside_the_file_is_refused(exported: Path, tmp_path: Path):
    path = copy_of(exported, tmp_path)
    data = bytearray(path.read_bytes())
    weights = max(onnx.load(str(exported)).graph.initializer, key=lambda tensor: len(tensor.raw_data)).raw_data
    at = data.find(weights)
    assert at > 0 and data.find(weights, at + 1) == -1
    data[at : at + 4] = struct.pack("<f", 10.0)  # still a float, still parses and runs
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="its SHA-256 differs from the digest recorded at export") as error:
        OnnxModel(path)
    assert error.value.where == str(path) and CHANGED in error.value.problem


def test_a_model_changed_on_purpose_infers_once_its_digest_entry_is_deleted(exported: Path, tmp_path: Path):
    path = copy_of(exported, tmp_path)
    proto = onnx.load(str(path))
    proto.graph.initializer[0].raw_data = bytes(len(proto.graph.initializer[0].raw_data))
    onnx.save(proto, str(path))
    with pytest.raises(UserError, match=f"delete its '{GRAPH_DIGEST_KEY}' metadata entry"):
        OnnxModel(path)
    kept = [entry for entry in proto.metadata_props if entry.key != GRAPH_DIGEST_KEY]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    onnx.save(proto, str(path))
    assert OnnxModel(path).contract["artifact"] == "generative"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x3a\x80", "cut short"),  # the graph field's length varint never ends
        (b"\x3a\x05ab", "runs past the end"),
        (b"\x3b", "wire type 3 of field 7"),
    ],
)
def test_bytes_that_are_no_model_message_are_named(data: bytes, reason: str):
    with pytest.raises(MalformedModel, match=reason):
        graph_digest(data)


def test_a_digest_entry_that_is_no_digest_is_named_as_such(exported: Path, tmp_path: Path):
    path = copy_of(exported, tmp_path)
    proto = onnx.load(str(path))
    next(entry for entry in proto.metadata_props if entry.key == GRAPH_DIGEST_KEY).value = "not a digest"
    onnx.save(proto, str(path))
    with pytest.raises(UserError, match=f"its '{GRAPH_DIGEST_KEY}' metadata entry is not a SHA-256 digest"):
        OnnxModel(path)
