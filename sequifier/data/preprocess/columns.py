"""Column typing: which selected columns are categorical (ids, "Int64") and which are real ("Float64"/"Float32")."""

from __future__ import annotations

import pyarrow as pa

from sequifier.config.errors import UserError
from sequifier.config.preprocess import PreprocessConfig
from sequifier.data.metadata import CATEGORICAL_TYPE


def _is_categorical_type(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_integer(arrow_type)
        or pa.types.is_boolean(arrow_type)
    )


def _real_type_name(arrow_type: pa.DataType) -> str:
    return "Float32" if pa.types.is_float32(arrow_type) or pa.types.is_float16(arrow_type) else "Float64"


def _check_overrides(selected: list[str], config: PreprocessConfig) -> None:
    for key in ("categorical_columns", "real_columns"):
        for column in getattr(config, key) or []:
            if column not in selected:
                raise UserError(key, f"{column!r} is not a selected column")
    both = set(config.categorical_columns or []) & set(config.real_columns or [])
    if both:
        raise UserError("real_columns", f"{sorted(both)[0]!r} is also listed in categorical_columns")


def _column_type(name: str, arrow_type: pa.DataType, config: PreprocessConfig) -> str:
    numeric = pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_boolean(arrow_type)
    if name in (config.categorical_columns or []):
        if not (_is_categorical_type(arrow_type) or numeric):
            raise UserError(name, f"cannot be categorical: unsupported type {arrow_type}")
        return CATEGORICAL_TYPE
    if name in (config.real_columns or []):
        if not numeric:
            raise UserError(name, f"cannot be real: type {arrow_type} is not numeric")
        return _real_type_name(arrow_type)
    if _is_categorical_type(arrow_type):
        return CATEGORICAL_TYPE
    if pa.types.is_floating(arrow_type):
        return _real_type_name(arrow_type)
    raise UserError(name, f"unsupported type {arrow_type}; use strings, integers, booleans or floats")


def resolve_column_types(schema: pa.Schema, selected: list[str], config: PreprocessConfig) -> dict[str, str]:
    """Per selected column, in selected order: explicit config lists first, else inferred from the dtype."""
    _check_overrides(selected, config)
    return {name: _column_type(name, schema.field(name).type, config) for name in selected}
