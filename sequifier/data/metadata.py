"""Dataset metadata JSON: the contract between preprocess, train and infer (read, validate, write)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from sequifier.atomic import write_text_atomic
from sequifier.config.errors import UserError

SPECIAL_TOKEN_IDS = {"[unknown]": 0, "[other]": 1, "[mask]": 2}

# Reals are stored as (x - mean) / (std + NORMALIZATION_EPSILON), as sequifier 3.x does.
NORMALIZATION_EPSILON = 1e-9

CATEGORICAL_TYPE = "Int64"
REAL_TYPES = ("Float64", "Float32")

# Key order of the metadata JSON written by sequifier 3.x.
JSON_KEY_ORDER = (
    "n_classes",
    "id_maps",
    "cardinality_config",
    "special_token_ids",
    "split_paths",
    "column_data_types",
    "selected_columns_statistics",
    "normalize_real_columns",
    "normalize_on_all_data",
    "window_stride",
    "prediction_aligned_splits",
    "split_ratios",
    "split_method",
    "split_column",
    "split_values",
    "depth_layouts",
    "tensor_payload_version",
    "window_length",
    "window_lengths",
    "prediction_alignment_steps",
    "max_target_offset",
    "stored_window_layout_version",
    "prediction_length",
    "target_offset",
)

REQUIRED_KEYS = ("n_classes", "id_maps", "split_paths", "column_data_types", "window_length")


@dataclass(frozen=True)
class DatasetMetadata:
    """What preprocess decided about a data set; see docs/spec data-formats.md."""

    n_classes: dict[str, int]
    id_maps: dict[str, dict[str, int]]
    special_token_ids: dict[str, int]
    split_paths: list[str]
    column_data_types: dict[str, str]
    selected_columns_statistics: dict[str, dict[str, float]]
    normalize_real_columns: bool
    window_length: int
    window_lengths: list[int]
    window_stride: int
    max_target_offset: int
    cardinality_config: dict = field(default_factory=dict)
    normalize_on_all_data: bool = False
    prediction_aligned_splits: list = field(default_factory=list)
    split_ratios: list[float] | None = None
    split_method: str | None = "within_sequence"
    split_column: str | None = None
    split_values: list | None = None
    depth_layouts: dict = field(default_factory=dict)
    tensor_payload_version: int = 1
    prediction_alignment_steps: int = 1
    stored_window_layout_version: int = 2
    prediction_length: int | None = None
    target_offset: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def categorical_columns(self) -> list[str]:
        return [c for c, t in self.column_data_types.items() if t == CATEGORICAL_TYPE]

    @property
    def real_columns(self) -> list[str]:
        return [c for c, t in self.column_data_types.items() if t in REAL_TYPES]

    def to_json_dict(self) -> dict:
        """Plain dict in the 3.x key order; unknown keys read earlier come last."""
        out = {key: getattr(self, key) for key in JSON_KEY_ORDER}
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return copy.deepcopy(out)


def normalize_values(values: np.ndarray, statistics: dict[str, float]) -> np.ndarray:
    return (values - statistics["mean"]) / (statistics["std"] + NORMALIZATION_EPSILON)


def denormalize_values(values: np.ndarray, statistics: dict[str, float]) -> np.ndarray:
    return values * (statistics["std"] + NORMALIZATION_EPSILON) + statistics["mean"]


def _defaults_for_missing(raw: dict) -> dict:
    """Defaults of optional keys that depend on other keys."""
    window_length = raw["window_length"]
    return {
        "special_token_ids": dict(SPECIAL_TOKEN_IDS),
        "selected_columns_statistics": {},
        "normalize_real_columns": True,
        "window_lengths": [window_length] * len(raw["split_paths"]),
        "window_stride": window_length,
        "max_target_offset": 1,
    }


def _check_types(where: str, meta: DatasetMetadata) -> None:
    for column, dtype in meta.column_data_types.items():
        if dtype != CATEGORICAL_TYPE and dtype not in REAL_TYPES:
            raise UserError(where, f"column_data_types[{column!r}] is {dtype!r}; expected Int64, Float64 or Float32")
    for column in meta.categorical_columns:
        if column not in meta.id_maps or column not in meta.n_classes:
            raise UserError(where, f"categorical column {column!r} has no id_maps/n_classes entry")
    if not isinstance(meta.window_length, int) or meta.window_length < 1:
        raise UserError(where, f"window_length must be a positive integer, got {meta.window_length!r}")
    if not isinstance(meta.split_paths, list) or not all(isinstance(p, str) for p in meta.split_paths):
        raise UserError(where, "split_paths must be a list of paths")


def metadata_from_dict(raw: dict, where: str = "metadata") -> DatasetMetadata:
    """Build metadata from a parsed JSON dict: defaults for missing optional keys, unknown keys kept in `extra`."""
    if not isinstance(raw, dict):
        raise UserError(where, "metadata must be a JSON object")
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise UserError(where, f"missing required key(s): {', '.join(missing)}")
    known = {f.name for f in fields(DatasetMetadata)} - {"extra"}
    values: dict[str, Any] = {k: v for k, v in raw.items() if k in known}
    for key, default in _defaults_for_missing(raw).items():
        values.setdefault(key, default)
    extra = {k: v for k, v in raw.items() if k not in known}
    meta = DatasetMetadata(**values, extra=extra)
    _check_types(where, meta)
    return meta


def read_metadata(path: Path) -> DatasetMetadata:
    path = Path(path)
    if not path.is_file():
        raise UserError(str(path), "metadata file not found (run `sequifier preprocess` first?)")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserError(str(path), f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    return metadata_from_dict(raw, where=str(path))


def write_metadata(path: Path, metadata: DatasetMetadata) -> None:
    write_text_atomic(Path(path), json.dumps(metadata.to_json_dict()))


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
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserError(str(path), f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    files = raw.get("batch_files") if isinstance(raw, dict) else None
    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("samples"), int) for f in files
    ):
        raise UserError(str(path), "batch_files must be a list of {path, samples} entries")
    if not isinstance(raw.get("window_length"), int):
        raise UserError(str(path), "window_length must be an integer")
    return raw
