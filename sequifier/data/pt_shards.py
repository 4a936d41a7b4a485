"""PT shards: the `sequifier_tensor_batch` files of a pt shard folder, checked when read and encoded for writing."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from sequifier.config.errors import UserError
from sequifier.data.metadata import CATEGORICAL_TYPE
from sequifier.data.safe_load import load_weights_only
from sequifier.data.stored_windows import IDENTIFIER_COLUMNS, StoredWindows, materialized

PT_FORMAT = "sequifier_tensor_batch"
PT_VERSION = 5
PT_DTYPES = {CATEGORICAL_TYPE: np.int64, "Float64": np.float64, "Float32": np.float32}


def _check_pt_payload(payload: Any, wanted: list[str], path: Path, layouts: dict[str, dict]) -> None:
    """A `sequifier_tensor_batch` dict: [N, W] tensors of the wanted columns and [N] identifier tensors.

    Deep columns of `layouts` are [N, W, capacity], beside a boolean mask of that shape per layout.
    """
    import torch

    if not isinstance(payload, dict) or payload.get("format") != PT_FORMAT:
        raise UserError(str(path), f"not a {PT_FORMAT} file")
    sequences = payload.get("sequences")
    if not isinstance(sequences, dict):
        raise UserError(str(path), "sequences must be a mapping of column to tensor")
    for column in wanted:
        if column not in sequences:
            raise UserError(column, f"column is not stored in {path}")
    capacity = {c: int(d["context_length"]) for d in layouts.values() for c in d["columns"]}
    shapes = {c: tuple(sequences[c].shape) for c in wanted if isinstance(sequences[c], torch.Tensor)}
    if (
        len(shapes) != len(wanted)
        or len({s[:2] for s in shapes.values()}) > 1
        or any(s[2:] != ((capacity[c],) if c in capacity else ()) for c, s in shapes.items())
    ):
        raise UserError(
            str(path),
            f"sequences of {wanted} must be tensors of one shape [windows, window length] "
            "([windows, window length, capacity] for deep columns)",
        )
    masks = (payload.get("metadata") or {}).get("depth_valid_masks") or {}
    for layout, definition in layouts.items():
        mask = masks.get(layout)
        expected = (*next(iter(shapes.values()))[:2], int(definition["context_length"]))
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or tuple(mask.shape) != expected:
            raise UserError(str(path), f"metadata.depth_valid_masks.{layout} must be a boolean tensor {list(expected)}")
    rows = next(iter(shapes.values()))[0] if shapes else None
    for attr in IDENTIFIER_COLUMNS.values():
        tensor = payload.get(attr)
        if not isinstance(tensor, torch.Tensor) or tensor.dim() != 1 or rows not in (None, tensor.shape[0]):
            raise UserError(str(path), f"{attr} must be a tensor of one value per window")


def content_digest(path: Path) -> str | None:
    """SHA-256 of the CRC-32 and size of each part of a PT file's archive, from its index alone: what a shard folder's
    metadata.json records of each PT shard (3.x reads only its own payload keys, so a shard cannot record its
    meanings itself). None for a file that is no zip archive, which loading it reports."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = [(info.filename.partition("/")[2], info.CRC, info.file_size) for info in archive.infolist()]
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return None
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


def windows_from_pt(
    path: Path, wanted: list[str], dtypes: dict[str, np.dtype], layouts: dict[str, dict], digest: str | None
) -> StoredWindows:
    """The windows of one PT shard, the `wanted` columns materialized as `dtypes`.

    A shard whose content digest is not the `digest` its folder's metadata.json records is refused.
    """
    found = content_digest(path) if digest is not None else None
    if found is not None and found != digest:
        raise UserError(
            str(path),
            f"is not the shard {path.parent / 'metadata.json'} lists under this name: its contents differ from those "
            "recorded when it was written (a shard of another preprocess run, or one changed since); preprocess "
            "the split again rather than mixing shards",
        )
    payload = load_weights_only(path, "PT shard")
    _check_pt_payload(payload, wanted, path, layouts)
    sequences = payload["sequences"]
    arrays = {c: materialized(sequences[c].numpy(), dtypes[c], f"{path}: column {c!r}") for c in wanted}
    masks = payload["metadata"]["depth_valid_masks"] if layouts else {}
    return StoredWindows(
        columns=arrays,
        **{attr: payload[attr].numpy().astype(np.int64, copy=False) for attr in IDENTIFIER_COLUMNS.values()},
        depth_masks={layout: masks[layout].numpy() for layout in layouts},
    )


def pt_payload(windows: StoredWindows, column_types: dict[str, str]) -> dict:
    """The `sequifier_tensor_batch` dict of one PT shard (torch.load(weights_only=True) reads it back)."""
    import torch

    return {
        "format": PT_FORMAT,
        "version": PT_VERSION,
        "sequences": {c: torch.from_numpy(windows.columns[c].astype(PT_DTYPES[t])) for c, t in column_types.items()},
        "metadata": {
            "depth_valid_masks": {layout: torch.from_numpy(mask) for layout, mask in windows.depth_masks.items()},
            "sample_positions": None,
            "curriculum_columns": [],
        },
        **{attr: torch.from_numpy(getattr(windows, attr).astype(np.int64)) for attr in IDENTIFIER_COLUMNS.values()},
    }
