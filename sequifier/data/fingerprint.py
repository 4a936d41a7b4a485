"""Which meanings stored windows were written with: a digest of the categories, statistics and layouts of a metadata.

Preprocess records it in the key-value metadata of each merged Parquet split, and beside each merged CSV split in
`<split>.csv.meanings.json` (csv_meanings.py); training and infer compare it with the metadata they are given, so
that a split of another preprocess run is refused instead of read with the wrong meanings. Next to it a split
records one digest per column (its id map, or its statistics when normalized) and each column's kind (categorical
or real), which infer compares with the model's contract. Splits without them (earlier releases, copied without
the file beside) are read as before; a shard folder carries its whole metadata.json, which infer checks against
the model; each Parquet shard records the fingerprint too, and the metadata.json each PT shard's content digest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sequifier.config.errors import UserError
from sequifier.data.csv_meanings import recorded_beside
from sequifier.data.folder_metadata import FOLDER_METADATA, read_folder_metadata
from sequifier.data.metadata import BOOLEAN_SPELLINGS_OF_3X, ID_MAP_RESERVED, DatasetMetadata, metadata_from_dict

KEY = b"sequifier.meanings"
COLUMNS_KEY = b"sequifier.column_meanings"
KINDS_KEY = b"sequifier.column_kinds"


def meanings_fingerprint(metadata: DatasetMetadata) -> str:
    """SHA-256 of the column types, id maps, normalization statistics (when used) and depth layouts, as JSON."""
    return _fingerprint(_as_written(metadata))


def _as_written(metadata: DatasetMetadata) -> dict:
    """The metadata as its JSON file holds it (keys and values as JSON spells them)."""
    return json.loads(json.dumps(metadata.to_json_dict()))


def _fingerprint(written: dict) -> str:
    meanings = {
        "column_data_types": written["column_data_types"],
        "id_maps": written["id_maps"],
        "statistics": written["selected_columns_statistics"] if written["normalize_real_columns"] else None,
        "depth_layouts": written.get("depth_layouts") or {},
    }
    return hashlib.sha256(json.dumps(meanings, sort_keys=True).encode("utf-8")).hexdigest()


def column_meaning(id_map: dict | None, statistics: dict | None) -> str:
    """SHA-256 of what one column's stored values mean: its id map (categorical) or its statistics (normalized real)."""
    meaning = {"id_map": id_map, "statistics": statistics}
    return hashlib.sha256(json.dumps(meaning, sort_keys=True).encode("utf-8")).hexdigest()


def values_of(id_map: dict) -> dict:
    """An id map's entries of data values, spelled as 3.x spells them: two maps mean the same when these agree.

    `[unknown]` and `[other]` have fixed ids, and maps of integer columns (3.x's, and ours since they are written as
    3.x writes them) leave them out; 3.x spells booleans 0 and 1 where ours spell them False and True."""
    values = {value: i for value, i in id_map.items() if value not in ID_MAP_RESERVED}
    if values and set(values) <= set(BOOLEAN_SPELLINGS_OF_3X):
        return {BOOLEAN_SPELLINGS_OF_3X[value]: i for value, i in values.items()}
    return values


def id_map_meanings(id_map: dict) -> set[str]:
    """The column_meaning digests a split of a column with this map may record: with and without reserved entries,
    and, for a map of 0 and 1, also spelled False and True."""
    values = values_of(id_map)
    spellings = [values]
    if values and set(values) <= set(BOOLEAN_SPELLINGS_OF_3X.values()):
        spellings.append({ours: values[theirs] for ours, theirs in BOOLEAN_SPELLINGS_OF_3X.items() if theirs in values})
    return {column_meaning(id_map, None)} | {
        column_meaning(entries, None) for values in spellings for entries in (values, values | ID_MAP_RESERVED)
    }


def recorded_meanings(metadata: DatasetMetadata) -> dict[bytes, bytes]:
    """The key-value metadata a merged Parquet split carries: the whole fingerprint and one digest per column."""
    written = _as_written(metadata)
    return {
        KEY: _fingerprint(written).encode("utf-8"),
        COLUMNS_KEY: json.dumps(_column_meanings(written)).encode("utf-8"),
        KINDS_KEY: json.dumps(_column_kinds(written)).encode("utf-8"),
    }


def _column_kinds(written: dict) -> dict[str, str]:
    """Column -> "categorical" (it has an id map) or "real", of a metadata as its JSON file holds it."""
    return {name: "categorical" if name in written["id_maps"] else "real" for name in written["column_data_types"]}


def _column_meanings(written: dict) -> dict[str, str]:
    """Column -> column_meaning of a metadata as its JSON file holds it: what its stored values mean, whatever the
    spelling of its type (3.x's Int32 and ours Int64 alike)."""
    statistics = written["selected_columns_statistics"] if written["normalize_real_columns"] else {}
    return {
        name: column_meaning(written["id_maps"].get(name), None if name in written["id_maps"] else statistics.get(name))
        for name in written["column_data_types"]
    }


def _recorded(path: Path, key: bytes) -> str | None:
    """The value of `key` a merged Parquet or CSV split was written with; None for other files and splits without it."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv") or not path.is_file():
        return None
    if suffix == ".csv":
        return recorded_beside(path, key)
    import pyarrow as pa  # only for Parquet splits: pt-shard training never loads pyarrow
    import pyarrow.parquet as pq

    try:
        value = (pq.read_schema(path).metadata or {}).get(key)
    except (pa.ArrowException, OSError, UnicodeDecodeError):
        return None  # loading the split reports what is wrong with the file
    return value.decode("utf-8", "replace") if value else None


def split_fingerprint(path: Path) -> str | None:
    return _recorded(path, KEY)


def split_column_meanings(path: Path) -> dict[str, str] | None:
    """Column -> digest (column_meaning) of a merged split; None where it records none."""
    return _recorded_columns(path, COLUMNS_KEY)


def split_column_kinds(path: Path) -> dict[str, str] | None:
    """Column -> "categorical" or "real" as preprocess read it, of a merged split; None where it has none."""
    return _recorded_columns(path, KINDS_KEY)


def _recorded_columns(path: Path, key: bytes) -> dict[str, str] | None:
    text = _recorded(path, key)
    try:
        columns = json.loads(text) if text else None
    except ValueError:
        return None
    return columns if isinstance(columns, dict) else None


def check_same_meanings(split: Path, metadata: DatasetMetadata, metadata_path: Path) -> None:
    """A merged split's record, or a shard folder's metadata.json, holds the meanings of `metadata`; splits that
    record none (3.x's) pass."""
    split = Path(split)
    ours = _as_written(metadata)
    if split.is_dir():
        try:
            described = _folder_metadata(read_folder_metadata(split), split)
        except UserError:
            return  # loading the folder reports what is wrong with it
        if described is None or _fingerprint(described) == _fingerprint(ours):
            return
        if _column_meanings(described) == _column_meanings(ours) and (described.get("depth_layouts") or {}) == (
            ours.get("depth_layouts") or {}
        ):
            return  # the same maps and statistics, its types spelled otherwise (3.x's metadata reused)
        kinds = _column_kinds(described)
        split = split / FOLDER_METADATA
    else:
        written = split_fingerprint(split)
        if written is None or written == _fingerprint(ours):
            return
        if split_column_meanings(split) == _column_meanings(ours):
            return  # the same maps and statistics, its types spelled otherwise (3.x's metadata reused)
        kinds = split_column_kinds(split) or {}
    held, expected = sorted(kinds), sorted(metadata.column_data_types)
    if held and held != expected:
        raise UserError(
            str(split),
            f"was written by a preprocess run with other columns ({', '.join(held)}) than {metadata_path}'s "
            f"({', '.join(expected)}); use the metadata of the run that wrote it, or preprocess again",
        )
    for name, kind in kinds.items():
        kind_there = "categorical" if name in metadata.id_maps else "real"
        if kind != kind_there:
            raise UserError(
                str(split),
                f"holds {name!r} as a {kind} column, but {metadata_path} has it as a {kind_there} one; use the "
                "metadata of the run that wrote it, or preprocess again",
            )
    raise UserError(
        str(split),
        f"was written by a preprocess run whose categories or statistics differ from {metadata_path}'s; use the "
        "metadata of the run that wrote it, or preprocess again",
    )


def folder_fingerprint(described: dict, folder: Path) -> str | None:
    """The fingerprint of the meanings a shard folder's metadata.json describes; None where it describes none."""
    written = _folder_metadata(described, folder)
    return None if written is None else _fingerprint(written)


def _folder_metadata(described: dict, folder: Path) -> dict | None:
    """A shard folder's metadata.json as a metadata's JSON holds it; None where it describes no meanings."""
    try:
        return _as_written(metadata_from_dict({"split_paths": [], **described}, where=str(folder)))
    except (UserError, KeyError, TypeError, ValueError):
        return None  # reading the folder's metadata for its meanings reports what is wrong with it


def foreign_shard(shard: Path) -> UserError:
    return UserError(
        str(shard),
        f"was written by another preprocess run than the rest of {shard.parent} (its metadata.json): its categories "
        "or statistics differ; preprocess the split again rather than mixing shards of two runs",
    )


def records_these_meanings(split: Path, metadata: DatasetMetadata) -> bool:
    """Whether `split` (a merged file's record, or a shard folder's metadata.json) records exactly the meanings of
    `metadata`: then it was preprocessed with them, whatever its window layout."""
    split = Path(split)
    if split.is_dir():
        recorded = folder_fingerprint(read_folder_metadata(split), split)
    else:
        recorded = split_fingerprint(split)
    return recorded is not None and recorded == meanings_fingerprint(metadata)
