"""Column plan: the selected columns and what to read.

Each selected column is categorical (ids, "Int64") or real ("Float64"/"Float32"). With a depth
layout, its columns are deep (one value per child) and its position column is read besides them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pyarrow as pa

from sequifier.config.errors import UserError, did_you_mean
from sequifier.config.preprocess import ID_COLUMNS, DepthLayoutConfig, PreprocessConfig
from sequifier.data.column_names import column_name_problem
from sequifier.data.metadata import CATEGORICAL_TYPE
from sequifier.preprocess.reuse import ReusedMeaning
from sequifier.preprocess.sources import InputSource, first_non_number


@dataclass(frozen=True)
class ColumnPlan:
    """Selected feature columns in order with their types, the optional split column and depth layout."""

    types: dict[str, str]
    split_column: Optional[str] = None
    layout_name: Optional[str] = None
    layout: Optional[DepthLayoutConfig] = None

    @property
    def selected(self) -> list[str]:
        return list(self.types)

    @property
    def categorical(self) -> list[str]:
        return [c for c, t in self.types.items() if t == CATEGORICAL_TYPE]

    @property
    def real(self) -> list[str]:
        return [c for c, t in self.types.items() if t != CATEGORICAL_TYPE]

    @property
    def deep(self) -> list[str]:
        """Selected columns of the depth layout (one value per child slot)."""
        return list(self.layout.columns) if self.layout else []

    @property
    def read_columns(self) -> list[str]:
        return read_columns(self.selected, self.split_column, self.layout)


def read_columns(
    selected: list[str], split_column: Optional[str], layout: Optional[DepthLayoutConfig] = None
) -> list[str]:
    """Identifiers, the depth position column, selected columns, then the split column when it is not selected."""
    extra = [split_column] if split_column and split_column not in selected else []
    position = [layout.position_column] if layout else []
    return [*ID_COLUMNS, *position, *selected, *extra]


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


def _column_type(name: str, arrow_type: pa.DataType, config: PreprocessConfig, source: InputSource) -> str:
    numeric = pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_boolean(arrow_type)
    where = f"in {_first_file_with(source, name, arrow_type)}"
    if name in (config.categorical_columns or []):
        if not (_is_categorical_type(arrow_type) or numeric):
            raise UserError(name, f"cannot be categorical: unsupported type {arrow_type} {where}{_cast_hint(source)}")
        return CATEGORICAL_TYPE
    if name in (config.real_columns or []):
        if not numeric:
            raise UserError(name, f"cannot be real: {_not_numeric(name, arrow_type, source)}")
        return _real_type_name(arrow_type)
    if _is_categorical_type(arrow_type):
        return CATEGORICAL_TYPE
    if pa.types.is_floating(arrow_type):
        if name in source.rounded_integers:
            path, literal = source.rounded_integers[name]
            raise UserError(
                name,
                f"holds the integer {literal} in {path}, which csv reads as a float (beside fractions, or beyond "
                "the 64-bit integers) and rounds, since floats hold integers exactly only up to 2**53; list the "
                "column in categorical_columns to keep its text, or in real_columns to accept the rounding",
            )
        return _real_type_name(arrow_type)
    if (pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)) and source.read_format == "csv":
        raise UserError(
            name,
            f"holds bytes that are not UTF-8 text {where} (saved in another encoding); save the input as UTF-8, "
            "or convert it to parquet",
        )
    unselected = (
        ""
        if config.selected_columns is not None
        else "; or leave it out by listing the feature columns in selected_columns (every column but the "
        "identifiers is selected without it)"
    )
    raise UserError(
        name,
        f"unsupported type {arrow_type} {where}; use strings, integers, booleans or floats{_cast_hint(source)}"
        + unselected,
    )


def _not_numeric(name: str, arrow_type: pa.DataType, source: InputSource) -> str:
    path = _first_file_with(source, name, arrow_type)
    found = first_non_number(path, name) if source.read_format == "csv" else None
    if found is None:
        return f"type {arrow_type} in {path} is not numeric"
    row, value = found
    return f"its value {value!r} at row {row} of {path} is not a number"


def _first_file_with(source: InputSource, name: str, arrow_type: pa.DataType) -> Path:
    typed = [path for path, schema in zip(source.files, source.file_schemas) if schema.field(name).type == arrow_type]
    return typed[0] if typed else source.files[0]


def _cast_hint(source: InputSource) -> str:
    if source.read_format == "csv":
        return " (list the column in categorical_columns to read its text as categories)"
    return " (cast the column to strings or numbers before preprocessing)"


def resolve_column_types(source: InputSource, selected: list[str], config: PreprocessConfig) -> dict[str, str]:
    """Per selected column, in selected order: explicit config lists first, else inferred from the dtype."""
    _check_overrides(selected, config)
    return {name: _column_type(name, source.schema.field(name).type, config, source) for name in selected}


def _selected(config: PreprocessConfig, source: InputSource, reused: Optional[ReusedMeaning]) -> list[str]:
    names = source.schema.names
    if config.selected_columns is not None:
        selected = list(config.selected_columns)
    elif reused is not None:
        selected = reused.columns
        for column in selected:
            if column not in names:
                raise reused.mismatch(column, f"is a column of {reused.path} but missing from {source.files[0]}")
    else:
        position = config.depth_layout[1].position_column if config.depth_layout else None
        selected = [n for n in names if n not in ID_COLUMNS and n != position]
    for column in selected:
        if column not in names:
            raise UserError(
                column, f"selected column is not in the input {source.files[0]}" + did_you_mean(column, names)
            )
        problem = column_name_problem(column)
        if problem is not None:
            if config.selected_columns is not None:
                raise UserError("selected_columns", f"the column name {column!r} {problem}; rename the column")
            raise UserError(
                str(source.files[0]),
                f"the column name {column!r} {problem}; rename the column, or leave it out by listing the feature "
                "columns in selected_columns"
                + (" (a line ending in a comma adds an unnamed column)" if not column else ""),
            )
    if not selected:
        raise UserError(str(source.files[0]), "the input has no feature columns besides the identifiers")
    return selected


def _missing_hint(name: str, names: list[str]) -> str:
    """What the header probably got wrong: spaces around a name, or a misspelling (a csv header without commas is
    refused when the file is opened)."""
    spaced = [n for n in names if n.strip() == name]
    if spaced:
        return f" (a column is named {spaced[0]!r}: remove the spaces around the name)"
    return did_you_mean(name, names)


def plan_columns(
    config: PreprocessConfig, source: InputSource, reused: Optional[ReusedMeaning]
) -> tuple[ColumnPlan, InputSource]:
    """The column plan, and the source restricted to the columns it reads (types unified over the files)."""
    for name in ID_COLUMNS:
        if name not in source.schema.names:
            raise UserError(
                name, f"required column is missing from {source.files[0]}{_missing_hint(name, source.schema.names)}"
            )
    selected = _selected(config, source, reused)
    if config.split_column is not None and config.split_column not in source.schema.names:
        raise UserError(
            "split_column",
            f"{config.split_column!r} is not a column of {source.files[0]}"
            + did_you_mean(config.split_column, source.schema.names),
        )
    name, layout = config.depth_layout or (None, None)
    if layout is not None:
        for column in layout.columns:
            if column not in selected:
                raise UserError(f"depth_layouts.{name}.columns", f"{column!r} is not a selected column")
        if config.split_column in layout.columns:
            raise UserError(
                "split_column",
                f"{config.split_column!r} is a deep column of depth layout {name!r} (a value per child row); the split "
                "column decides an item's split, so it holds one value per item",
            )
    source = source.restricted(read_columns(selected, config.split_column, layout))
    if layout is not None and not pa.types.is_integer(source.schema.field(layout.position_column).type):
        files = (
            source.files[0] if len(source.files) == 1 else f"the {len(source.files)} files of {source.files[0].parent}"
        )
        raise UserError(
            layout.position_column,
            f"the depth position column must hold integers, found "
            f"{source.schema.field(layout.position_column).type} in {files}",
        )
    types = resolve_column_types(source, selected, config)
    if reused is not None:
        reused.check_types(types, source.files[0])
        reused.check_layouts({name: layout.definition()} if layout else {})
        types = reused.stored_types(types)
    plan = ColumnPlan(types=types, split_column=config.split_column, layout_name=name, layout=layout)
    return plan, source
