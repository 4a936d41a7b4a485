"""The metadata.json of a sharded split folder: its shards with their sample counts, beside the dataset's meanings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sequifier.atomic import write_text_atomic
from sequifier.config.errors import UserError
from sequifier.data.metadata import DatasetMetadata, is_int, metadata_from_dict, read_json

# Key order of a sharded split folder's metadata.json written by sequifier 3.x.
FOLDER_KEY_ORDER = (
    "split_index",
    "n_classes",
    "column_data_types",
    "id_maps",
    "selected_columns_statistics",
    "normalize_real_columns",
    "total_samples",
    "batch_files",
    "depth_layouts",
    "tensor_payload_version",
    "window_length",
    "window_lengths",
    "prediction_alignment_steps",
    "max_target_offset",
    "stored_window_layout_version",
    "prediction_aligned_splits",
    "prediction_length",
    "target_offset",
)
FOLDER_METADATA = "metadata.json"
CONTENT_DIGEST = "content_digest"  # of a PT shard's batch_files entry, after 3.x's keys (pt_shards.content_digest)


def folder_metadata_dict(split_index: int, metadata: DatasetMetadata, batch_files: list[dict]) -> dict:
    """The metadata.json of one split folder: its shards with sample counts plus the semantic keys."""
    semantic = metadata.to_json_dict()
    values = {
        "split_index": split_index,
        "total_samples": sum(int(f["samples"]) for f in batch_files),
        "batch_files": batch_files,
    }
    return {key: values[key] if key in values else semantic[key] for key in FOLDER_KEY_ORDER}


def write_folder_metadata(folder: Path, split_index: int, metadata: DatasetMetadata, batch_files: list[dict]) -> None:
    write_text_atomic(
        Path(folder) / FOLDER_METADATA, json.dumps(folder_metadata_dict(split_index, metadata, batch_files), indent=4)
    )


def read_folder_metadata(folder: Path) -> dict:
    """A split folder's metadata.json; batch_files entries must name a path and a sample count."""
    path = Path(folder) / FOLDER_METADATA
    if not path.is_file():
        raise UserError(str(folder), f"a sharded split folder needs its {FOLDER_METADATA} (not found)")
    raw = read_json(path)
    files = raw.get("batch_files") if isinstance(raw, dict) else None
    if not isinstance(files, list) or not all(_is_batch_file(f) for f in files):
        raise UserError(
            str(path),
            "batch_files must be a list of {path: file name in the folder, samples: count}, with an optional "
            f"{CONTENT_DIGEST} of text",
        )
    names = [entry["path"] for entry in files]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UserError(str(path), f"batch_files lists {', '.join(repeated)} more than once; each shard once")
    total, counted = raw.get("total_samples"), sum(entry["samples"] for entry in files)
    if total is not None and total != counted:
        raise UserError(str(path), f"total_samples is {total}, but the samples of batch_files sum to {counted}")
    window_length = raw.get("window_length")
    if not is_int(window_length) or window_length < 1:
        raise UserError(str(path), "window_length must be a positive integer")
    return raw


def folder_meanings(folder: Path) -> DatasetMetadata:
    """The categories, statistics and layouts a split folder's shards were written with (its metadata.json)."""
    raw = read_folder_metadata(folder)
    return metadata_from_dict({"split_paths": [], **raw}, where=str(Path(folder) / FOLDER_METADATA))


def _is_batch_file(entry: Any) -> bool:
    """A shard of the folder itself (a plain file name) with a sample count."""
    if not isinstance(entry, dict) or not is_int(entry.get("samples")) or entry["samples"] < 0:
        return False
    if not isinstance(entry.get(CONTENT_DIGEST, ""), str):
        return False
    name = entry.get("path")
    return isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name
