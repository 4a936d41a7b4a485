"""The SHA-256 of an ONNX file's graph as stored (nodes and weights), found in the protobuf bytes without parsing them.

Export records it in the model's metadata (GRAPH_DIGEST_KEY); infer recomputes it from the file, so bytes changed
inside a weight, which still parse and run, are refused instead of predicted with. Reading the top-level fields of
the wire format needs neither the `onnx` package nor a copy of the file: infer stays as light as ONNX Runtime.
"""

from __future__ import annotations

import hashlib
import mmap
from pathlib import Path

GRAPH_DIGEST_KEY = "sequifier.graph_digest"
GRAPH_FIELD = 7  # ModelProto.graph
LENGTH_DELIMITED, VARINT, FIXED64, FIXED32 = 2, 0, 1, 5


class MalformedModel(ValueError):
    """The bytes are not a protobuf message of top-level fields (ONNX Runtime's own reading then names the damage)."""


def graph_digest(data: bytes | memoryview) -> str:
    """The hex SHA-256 of the bytes of every top-level graph field of the serialized ModelProto `data`, in order."""
    view = memoryview(data).cast("B")
    digest = hashlib.sha256()
    position = 0
    while position < len(view):
        tag, position = _varint(view, position)
        field, wire_type = tag >> 3, tag & 7
        if wire_type == VARINT:
            _, position = _varint(view, position)
        elif wire_type in (FIXED64, FIXED32):
            position += 8 if wire_type == FIXED64 else 4
        elif wire_type == LENGTH_DELIMITED:
            length, position = _varint(view, position)
            if field == GRAPH_FIELD:
                digest.update(view[position : position + length])
            position += length
        else:
            raise MalformedModel(f"wire type {wire_type} of field {field} is not one a ModelProto holds")
        if position > len(view):
            raise MalformedModel("a field runs past the end of the file")
    return digest.hexdigest()


def file_graph_digest(path: Path) -> str:
    """`graph_digest` of a file, read through a memory map."""
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        with memoryview(mapped) as view:
            return graph_digest(view)


def _varint(view: memoryview, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(view) or shift > 63:
            raise MalformedModel("a field's tag or length is cut short")
        byte = view[position]
        value |= (byte & 0x7F) << shift
        position, shift = position + 1, shift + 7
        if byte < 0x80:
            return value, position
