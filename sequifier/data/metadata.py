"""Dataset metadata JSON: the contract between preprocess, train and infer (read, validate, write)."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

import numpy as np

from sequifier.atomic import write_text_atomic
from sequifier.config.errors import UserError, absent_file

SPECIAL_TOKEN_IDS = {"[unknown]": 0, "[other]": 1, "[mask]": 2}
# Reserved ids an id map may list ([mask] is only in special_token_ids and n_classes).
ID_MAP_RESERVED = {"[unknown]": SPECIAL_TOKEN_IDS["[unknown]"], "[other]": SPECIAL_TOKEN_IDS["[other]"]}
# Booleans as id maps spell them here -> as 3.x spells them (it reads booleans as the integers 0 and 1).
BOOLEAN_SPELLINGS_OF_3X = {"False": "0", "True": "1"}
FIRST_VALUE_ID = len(SPECIAL_TOKEN_IDS)  # data values take ids 3, 4, ...
MAX_CLASSES = 2**31  # the most classes a categorical column (its embedding and decoder rows) can have

# Reals are stored as (x - mean) / (std + NORMALIZATION_EPSILON), as sequifier 3.x does.
NORMALIZATION_EPSILON = 1e-9

CATEGORICAL_TYPE = "Int64"
# What metadata may record: the types this release writes, and the others 3.x's `column_data_types` option writes
# (its ids as any integer type, its reals as any float type; also in lower case).
_INTEGER_TYPES = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")
_FLOAT_TYPES = ("Float16", "Float32", "Float64")
_KINDS = {
    spelling: kind
    for names, kind in ((_INTEGER_TYPES, "categorical"), (_FLOAT_TYPES, "real"))
    for name in names
    for spelling in (name, name.lower())
}


def column_kind(data_type: str) -> str | None:
    """The kind of column a type name makes (categorical: integer types, real: float types); None for others."""
    return _KINDS.get(data_type) if isinstance(data_type, str) else None


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
        return [c for c, t in self.column_data_types.items() if column_kind(t) == "categorical"]

    @property
    def real_columns(self) -> list[str]:
        return [c for c, t in self.column_data_types.items() if column_kind(t) == "real"]

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


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _mapping_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, dict) and all(isinstance(k, str) and check(v) for k, v in value.items())


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _is_statistics(value: Any) -> bool:
    return (
        isinstance(value, dict) and _is_number(value.get("mean")) and _is_number(value.get("std")) and value["std"] >= 0
    )


# Every key of the metadata JSON: the check of its value, and what the check asks for.
FIELD_SHAPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "n_classes": (_mapping_of(is_int), "a mapping of column to an integer"),
    "id_maps": (_mapping_of(_mapping_of(is_int)), "a mapping of column to {raw value: integer id}"),
    "cardinality_config": (lambda value: isinstance(value, dict), "a mapping"),
    "special_token_ids": (_mapping_of(is_int), "a mapping of token to integer id"),
    "split_paths": (_list_of(_is_str), "a list of paths"),
    "column_data_types": (_mapping_of(_is_str), "a mapping of column to a type name"),
    "selected_columns_statistics": (
        _mapping_of(_is_statistics),
        "a mapping of column to {mean: finite number, std: finite number >= 0}",
    ),
    "normalize_real_columns": (_is_bool, "true or false"),
    "normalize_on_all_data": (_is_bool, "true or false"),
    "window_stride": (is_int, "an integer"),
    "prediction_aligned_splits": (lambda value: isinstance(value, list), "a list"),
    "split_ratios": (_optional(_list_of(_is_number)), "a list of numbers or null"),
    "split_method": (_optional(_is_str), "a string or null"),
    "split_column": (_optional(_is_str), "a string or null"),
    "split_values": (_optional(lambda value: isinstance(value, list)), "a list or null"),
    "depth_layouts": (lambda value: isinstance(value, dict), "a mapping"),
    "tensor_payload_version": (is_int, "an integer"),
    "window_length": (is_int, "an integer"),
    "window_lengths": (_list_of(is_int), "a list of integers"),
    "prediction_alignment_steps": (is_int, "an integer"),
    "max_target_offset": (is_int, "an integer"),
    "stored_window_layout_version": (is_int, "an integer"),
    "prediction_length": (_optional(is_int), "an integer or null"),
    "target_offset": (_optional(is_int), "an integer or null"),
}


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_shapes(where: str, values: dict[str, Any]) -> None:
    """Every known key holds a value of its type (unknown keys are kept as they are)."""
    for key, value in values.items():
        if key not in FIELD_SHAPES:
            continue
        check, wanted = FIELD_SHAPES[key]
        if not check(value):
            raise UserError(where, f"{key} must be {wanted}, got {_shown(value)}")


def check_id_map(where: str, column: str, id_map: dict[str, int], n_classes: int) -> None:
    """Reserved names keep their ids, values take distinct ids >= 3, and every id is below n_classes.

    (A map built from the data has no gaps; a static map may leave ids unused, as 3.x allows.)
    """
    for value, index in id_map.items():
        reserved = SPECIAL_TOKEN_IDS.get(value)
        if reserved is not None and index != reserved:
            raise UserError(where, f"id_maps.{column}: {value} must have id {reserved}, has {index}")
        if reserved is None and index < FIRST_VALUE_ID:
            raise UserError(where, f"id_maps.{column}: value {value!r} has the reserved id {index}")
    if len(set(id_map.values())) != len(id_map):
        raise UserError(where, f"id_maps.{column}: two values share an id")
    needed = max([*id_map.values(), *SPECIAL_TOKEN_IDS.values()]) + 1
    if n_classes > MAX_CLASSES:
        raise UserError(where, f"n_classes.{column} is {n_classes}; a column can have at most {MAX_CLASSES} classes")
    if n_classes < needed:
        raise UserError(
            where, f"n_classes.{column} is {n_classes}, but its id map needs at least {needed} (largest id + 1)"
        )


def check_metadata(where: str, meta: DatasetMetadata) -> None:
    """The consistency every metadata written or read must have; UserError naming `where` and the field."""
    _check_shapes(where, {f.name: getattr(meta, f.name) for f in fields(DatasetMetadata)})
    if meta.special_token_ids != SPECIAL_TOKEN_IDS:
        raise UserError(where, f"special_token_ids must be {json.dumps(SPECIAL_TOKEN_IDS)}")
    for column, dtype in meta.column_data_types.items():
        if column_kind(dtype) is None:
            raise UserError(
                where,
                f"column_data_types[{column!r}] is {dtype!r}; expected an integer type ({', '.join(_INTEGER_TYPES)}) "
                f"for a categorical column or a float type ({', '.join(_FLOAT_TYPES)}) for a real one",
            )
    for column in meta.categorical_columns:
        if column not in meta.id_maps or column not in meta.n_classes:
            raise UserError(where, f"categorical column {column!r} has no id_maps/n_classes entry")
        check_id_map(where, column, meta.id_maps[column], meta.n_classes[column])
    if meta.window_length < 1:
        raise UserError(where, f"window_length must be a positive integer, got {meta.window_length!r}")
    if any(length != meta.window_length for length in meta.window_lengths):
        raise UserError(
            where,
            f"window_lengths {_shown(meta.window_lengths)} disagree with window_length {meta.window_length}: every "
            "split is written with the one window_length",
        )
    if meta.window_stride < 1:
        raise UserError(where, f"window_stride must be a positive integer, got {meta.window_stride!r}")
    if meta.prediction_aligned_splits:
        raise UserError(
            where,
            f"prediction_aligned_splits is {meta.prediction_aligned_splits}: windows aligned for prediction (a 3.x "
            "option) are read here as plain windows, which would leave positions unpredicted and unscored; "
            "preprocess those splits without prediction alignment",
        )


def metadata_from_dict(raw: dict, where: str = "metadata") -> DatasetMetadata:
    """Build metadata from a parsed JSON dict: defaults for missing optional keys, unknown keys kept in `extra`."""
    if not isinstance(raw, dict):
        raise UserError(where, "metadata must be a JSON object")
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise UserError(where, f"missing required key(s): {', '.join(missing)}")
    known = {f.name for f in fields(DatasetMetadata)} - {"extra"}
    values: dict[str, Any] = {k: v for k, v in raw.items() if k in known}
    _check_shapes(where, values)
    for key, default in _defaults_for_missing(raw).items():
        values.setdefault(key, default)
    extra = {k: v for k, v in raw.items() if k not in known}
    meta = DatasetMetadata(**values, extra=extra)
    check_metadata(where, meta)
    return meta


def absent_metadata(path: Path, naming_it: bool = False) -> str:
    """Why there is no metadata file to read at `path` (named in the text if `naming_it`), with the likely remedy
    where nothing is there."""
    reason = absent_file(path)
    remedy = " (run `sequifier preprocess` first?)" if reason.startswith("does not exist") else ""
    return f"metadata file {f'{path} ' if naming_it else ''}{reason}{remedy}"


def read_metadata(path: Path) -> DatasetMetadata:
    path = Path(path)
    if not path.is_file():
        raise UserError(str(path), absent_metadata(path))
    return metadata_from_dict(read_json(path), where=str(path))


def read_json(path: Path) -> Any:
    """A JSON file's data; UserError naming the file when it is unreadable, not UTF-8, not JSON or nested too deep."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserError(str(path), f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(str(path), f"cannot read the file ({' '.join(str(error).split())[:200]})") from None
    except RecursionError:
        raise UserError(str(path), "JSON nested too deeply") from None


def write_metadata(path: Path, metadata: DatasetMetadata) -> None:
    check_metadata(str(path), metadata)
    write_text_atomic(Path(path), json.dumps(metadata.to_json_dict()))
