"""Which meanings stored windows were written with: a digest of the categories, statistics and layouts of a metadata.

Preprocess records it in the key-value metadata of each merged Parquet split; training and infer compare it with
the metadata they are given, so that a split of another preprocess run is refused instead of read with the wrong
meanings. Splits without it (CSV, shards, earlier releases) are read as before; a shard folder carries its whole
metadata.json, which infer checks against the model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sequifier.config.errors import UserError
from sequifier.data.metadata import DatasetMetadata

KEY = b"sequifier.meanings"


def meanings_fingerprint(metadata: DatasetMetadata) -> str:
    """SHA-256 of the column types, id maps, normalization statistics (when used) and depth layouts, as JSON."""
    written = json.loads(json.dumps(metadata.to_json_dict()))
    meanings = {
        "column_data_types": written["column_data_types"],
        "id_maps": written["id_maps"],
        "statistics": written["selected_columns_statistics"] if written["normalize_real_columns"] else None,
        "depth_layouts": written.get("depth_layouts") or {},
    }
    return hashlib.sha256(json.dumps(meanings, sort_keys=True).encode("utf-8")).hexdigest()


def split_fingerprint(path: Path) -> str | None:
    """The fingerprint a merged Parquet split was written with; None for other files and splits without one."""
    path = Path(path)
    if path.suffix != ".parquet" or not path.is_file():
        return None
    import pyarrow as pa  # only for Parquet splits: pt-shard training never loads pyarrow
    import pyarrow.parquet as pq

    try:
        value = (pq.read_schema(path).metadata or {}).get(KEY)
    except (pa.ArrowException, OSError):
        return None  # loading the split reports what is wrong with the file
    return value.decode("utf-8", "replace") if value else None


def check_same_meanings(split: Path, metadata: DatasetMetadata, metadata_path: Path) -> None:
    written = split_fingerprint(split)
    if written is not None and written != meanings_fingerprint(metadata):
        raise UserError(
            str(split),
            f"was written by a preprocess run whose categories or statistics differ from {metadata_path}'s; use the "
            "metadata of the run that wrote it, or preprocess again",
        )
