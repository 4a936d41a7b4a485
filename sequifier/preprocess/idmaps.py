"""Categorical id maps and encoding by them.

A map comes from the data, a static configs/id_maps/<column>.json, or reused metadata. Data values
spelled `[unknown]` or `[other]` are those reserved tokens (merged with a warning, as 3.x does);
`[mask]` in the data is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sequifier.config.errors import UserError
from sequifier.data.metadata import (
    BOOLEAN_SPELLINGS_OF_3X,
    FIRST_VALUE_ID,
    ID_MAP_RESERVED,
    MAX_CLASSES,
    SPECIAL_TOKEN_IDS,
)
from sequifier.preprocess.progress import log

OTHER_ID = SPECIAL_TOKEN_IDS["[other]"]
UNKNOWN_ID = SPECIAL_TOKEN_IDS["[unknown]"]


@dataclass(frozen=True)
class CategoricalMeaning:
    """The id map of one column as written to the metadata, and its n_classes."""

    id_map: dict[str, int]
    n_classes: int


@dataclass(frozen=True)
class CategoricalCodes:
    """Every distinct value the data holds, with the id it encodes to."""

    values: pa.Array
    ids: np.ndarray

    def encode(self, column: pa.ChunkedArray) -> np.ndarray:
        """int64 ids per row; missing values are [unknown]."""
        positions = pc.index_in(comparable(column), value_set=comparable(self.values))
        table = np.append(self.ids, UNKNOWN_ID)
        return table[pc.fill_null(positions, -1).to_numpy()]


def comparable(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """`values` as Arrow's sorting and lookups take them: float16 (which they do not) widened exactly to float32, and
    every NaN as one NaN (Arrow's lookups tell NaNs apart by their bits, which id maps, spelling each `nan`, do not)."""
    if pa.types.is_float16(values.type):
        values = values.cast(pa.float32())
    if pa.types.is_floating(values.type):
        values = pc.if_else(pc.is_nan(values), pa.scalar(float("nan"), values.type), values)
    return values


def value_names(values: pa.Array) -> list[str]:
    """Values as id maps spell them: Python's str, with float16 and float32 values in their own width's shortest
    spelling (0.1, not the 0.10000000149011612 of the value widened to a Python float)."""
    if pa.types.is_float16(values.type) or pa.types.is_float32(values.type):
        # the width's shortest digits, spelled as Python spells that number (numpy's own str writes 1e+03, 1e-04)
        shortest = (np.format_float_positional(value, unique=True) for value in values.to_numpy(zero_copy_only=False))
        return [str(float(digits)) for digits in shortest]
    return [str(value) for value in values.to_pylist()]


def text_spellings(id_map: dict[str, int], inferred: pa.DataType) -> list[str]:
    """A map's values spelled otherwise than values of the `inferred` type are (`007` for an integer, `TRUE` for a
    boolean): a map that has some was made from a column read as text, so a csv column must be read as text."""
    if pa.types.is_string(inferred) or pa.types.is_large_string(inferred) or pa.types.is_null(inferred):
        return []
    spelled_by_3x = set(BOOLEAN_SPELLINGS_OF_3X.values()) if pa.types.is_boolean(inferred) else set()
    return [
        name
        for name in id_map
        if name not in ID_MAP_RESERVED and name not in spelled_by_3x and _spelled_otherwise(name, inferred)
    ]


def _spelled_otherwise(name: str, inferred: pa.DataType) -> bool:
    try:
        return value_names(pa.array([name], pa.string()).cast(inferred)) != [name]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return True


def data_id_map(values: pa.Array) -> CategoricalMeaning:
    """Raw value (as string) -> id, data values from 3 in sorted order, then the reserved ids.

    Values spelled like a reserved token take no id of their own. A map of an integer column holds no reserved
    entries, as 3.x writes it, so that 3.x can reuse it (it reads the keys as integers).
    """
    names = [name for name in value_names(values) if name not in SPECIAL_TOKEN_IDS]
    id_map = {name: index + FIRST_VALUE_ID for index, name in enumerate(names)}
    if not pa.types.is_integer(values.type):
        id_map.update(ID_MAP_RESERVED)
    return CategoricalMeaning(id_map, FIRST_VALUE_ID + len(names))


def static_map_path(project_root: Path, column: str) -> Path:
    return Path(project_root) / "configs" / "id_maps" / f"{column}.json"


def static_id_map(path: Path) -> CategoricalMeaning:
    """A {raw value: id} JSON file; ids are distinct integers >= 3 (reserved entries may be listed with their ids)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_pairs_once)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(str(path), f"cannot read the id map ({' '.join(str(error).split())})") from None
    except _RepeatedValue as repeated:
        raise UserError(str(path), f"lists the value {repeated.args[0]!r} twice; each value has one id") from None
    if not isinstance(raw, dict) or not raw:
        raise UserError(str(path), "an id map must be a non-empty JSON object {raw value: id}")
    id_map: dict[str, int] = {}
    for key, value in raw.items():
        if key in ID_MAP_RESERVED or key == "[mask]":
            if value != SPECIAL_TOKEN_IDS[key]:
                raise UserError(str(path), f"{key} must have id {SPECIAL_TOKEN_IDS[key]}, got {value!r}")
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not FIRST_VALUE_ID <= value < MAX_CLASSES:
            raise UserError(
                str(path),
                f"id of {key!r} must be an integer from {FIRST_VALUE_ID} to {MAX_CLASSES - 1} (ids below the most "
                f"classes a column can have), got {value!r}",
            )
        id_map[key] = value
    if len(set(id_map.values())) != len(id_map):
        raise UserError(str(path), "two values share an id; ids must be distinct")
    id_map.update(ID_MAP_RESERVED)
    return CategoricalMeaning(id_map, max(id_map.values()) + 1)


class _RepeatedValue(Exception):
    pass


def _pairs_once(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose keys are distinct (json.loads would keep the last of a repeated one)."""
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise _RepeatedValue(key)
        seen[key] = value
    return seen


def _check_reserved_spellings(column: str, names: list[str]) -> None:
    """`[mask]` in the data is refused; `[unknown]` and `[other]` are merged into those tokens, with a warning."""
    if "[mask]" in names:
        raise UserError(column, "holds the value '[mask]', which is reserved for masking; rename the value in the data")
    for token in ID_MAP_RESERVED:
        if token in names:
            log(f"warning: {column} holds the value {token!r}; it is merged with the reserved token {token}")


def codes_for(column: str, values: pa.Array, meaning: CategoricalMeaning) -> CategoricalCodes:
    """Ids of the data's distinct values under `meaning`; values it does not know are [other]."""
    names = value_names(values)
    if pa.types.is_boolean(values.type) and not {"True", "False"} & set(meaning.id_map):
        names = [BOOLEAN_SPELLINGS_OF_3X.get(name, name) for name in names]
    _check_reserved_spellings(column, names)
    ids = np.array([meaning.id_map.get(name, OTHER_ID) for name in names], dtype=np.int64)
    unknown = [name for name in names if name not in meaning.id_map]
    if not names:
        log(
            f"warning: {column}: every value is missing, so every item is [unknown]: the column carries nothing to "
            "learn from, and as a target nothing to score"
        )
    elif len(unknown) == len(names):
        log(f"warning: {column}: none of its values is in the id map used, so every one becomes [other]")
    elif unknown:
        shown = ", ".join(repr(name) for name in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
        log(f"warning: {column}: {len(unknown)} of its values are not in the id map used and become [other] ({shown})")
    return CategoricalCodes(values, ids)


def column_meaning(
    column: str, values: pa.Array, project_root: Path, reused: Optional[CategoricalMeaning]
) -> CategoricalMeaning:
    """Reused metadata first, then a static map file, else the map built from the data's values."""
    path = static_map_path(project_root, column)
    if reused is not None:
        if path.is_file():
            log(f"note: {path} is not applied: the reused metadata (metadata_config_path) decides {column}'s ids")
        return reused
    return static_id_map(path) if path.is_file() else data_id_map(values)
