"""Loading a split of stored windows: a merged Parquet/CSV file, or a Parquet/PT shard folder read file by file.

A shard folder's files are read in the order its metadata.json lists them, or by path with `file_order: name`;
`folder_parts` reads one a part at a time, so that a reader holds at most a shard and a part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Collection, Iterator, Mapping, Sequence

import numpy as np

from sequifier.config.errors import UserError, absent_file
from sequifier.data.fingerprint import folder_fingerprint, foreign_shard, split_fingerprint
from sequifier.data.folder_metadata import CONTENT_DIGEST, read_folder_metadata
from sequifier.data.pt_shards import windows_from_pt
from sequifier.data.stored_windows import StoredWindows, check_bookkeeping, concat_windows, filled_windows


def _batch_files(described: dict, file_order: str) -> list[dict]:
    """A shard folder's `batch_files` entries in reading order."""
    files = described["batch_files"]
    return sorted(files, key=lambda entry: entry["path"]) if file_order == "name" else files


def file_window_counts(path: Path, file_order: str = "shuffled") -> list[int]:
    """Windows of each file of a shard folder, in reading order, from its metadata.json alone; [] for a merged file."""
    path = Path(path)
    if not path.is_dir():
        return []
    return [int(entry["samples"]) for entry in _batch_files(read_folder_metadata(path), file_order)]


def _windows_from_folder(
    path: Path,
    wanted: list[str],
    dtypes: dict[str, np.dtype],
    file_order: str,
    window_range: tuple[int, int] | None,
) -> StoredWindows:
    """The folder's windows in reading order (or windows start ... stop - 1 of them, opening only their shards)."""
    described = read_folder_metadata(path)
    files = _batch_files(described, file_order)
    start, stop = window_range or (0, sum(entry["samples"] for entry in files))
    parts = _shard_parts(path, described, files, wanted, dtypes, (start, stop))
    return filled_windows(parts, stop - start, wanted, described["window_length"])


def _shard_parts(
    path: Path,
    described: dict,
    files: list[dict],
    wanted: list[str],
    dtypes: dict[str, np.dtype],
    window_range: tuple[int, int],
) -> Iterator[StoredWindows]:
    """The windows in `window_range` of each shard that holds some, one shard at a time."""
    layouts = {
        name: definition
        for name, definition in (described.get("depth_layouts") or {}).items()
        if set(definition["columns"]) & set(wanted)
    }
    start, stop = window_range
    meanings = folder_fingerprint(described, path)
    first = 0
    for entry in files:
        last = first + entry["samples"]
        if first < stop and last > start:
            shard = path / entry["path"]
            if not shard.is_file():
                raise UserError(
                    str(shard),
                    f"is listed in {path / 'metadata.json'} but {absent_file(shard)}; preprocess the split again",
                )
            if shard.suffix == ".pt":
                part = windows_from_pt(shard, wanted, dtypes, layouts, entry.get(CONTENT_DIGEST))
            else:
                from sequifier.data.stored_tables import windows_from_table  # pyarrow only for Parquet/CSV shards

                recorded = split_fingerprint(shard)
                if recorded is not None and meanings is not None and recorded != meanings:
                    raise foreign_shard(shard)
                part = windows_from_table(shard, wanted, dtypes)
            if len(part) != entry["samples"]:
                raise UserError(
                    str(shard), f"holds {len(part)} windows, but {path / 'metadata.json'} says {entry['samples']}"
                )
            yield part.sliced(max(start - first, 0), min(stop, last) - first)
            del part
        first = last


def _stored_dtypes(columns: Sequence[str], categorical: Collection[str]) -> dict[str, np.dtype]:
    """Categorical columns as int64 ids, the others as float64."""
    return {c: np.dtype(np.int64 if c in categorical else np.float64) for c in columns}


def load_split(
    path: Path,
    columns: Sequence[str],
    categorical: Collection[str],
    file_order: str = "shuffled",
    window_range: tuple[int, int] | None = None,
    dtypes: Mapping[str, np.dtype] | None = None,
) -> StoredWindows:
    """Load a split (merged file, or shard folder with metadata.json, its files in `file_order`), materializing only
    `columns`.

    The `categorical` ones are materialized as int64 ids, the others as float64, unless `dtypes` names another
    dtype for a column. `window_range` (start, stop) keeps only those windows; from a shard folder only the
    shards that hold them are read.
    """
    path = Path(path)
    columns = list(columns)
    chosen = _stored_dtypes(columns, categorical) | dict(dtypes or {})
    if path.is_dir():
        windows = _windows_from_folder(path, columns, chosen, file_order, window_range)
    else:
        from sequifier.data.stored_tables import windows_from_table  # pyarrow only for Parquet/CSV files

        windows = windows_from_table(path, columns, chosen)
        windows = windows.sliced(*window_range) if window_range else windows
    check_bookkeeping(windows, str(path))
    return windows


def folder_parts(
    path: Path, columns: Sequence[str], categorical: Collection[str], size: int
) -> Iterator[StoredWindows]:
    """A shard folder's windows in reading order, `size` at a time (the last part may hold fewer)."""
    path, columns = Path(path), list(columns)
    described = read_folder_metadata(path)
    files = _batch_files(described, "shuffled")
    dtypes = _stored_dtypes(columns, categorical)
    whole = (0, sum(entry["samples"] for entry in files))
    shards = _shard_parts(path, described, files, columns, dtypes, whole)
    yield from _in_parts(shards, size, columns, described["window_length"], path)


def merged_parquet_parts(
    path: Path, columns: Sequence[str], categorical: Collection[str], size: int
) -> Iterator[StoredWindows]:
    """A merged Parquet split's windows, `size` at a time, read a batch of rows at a time."""
    from sequifier.data.stored_tables import parquet_windows  # pyarrow only for Parquet/CSV files

    path, columns = Path(path), list(columns)
    pieces = parquet_windows(path, columns, _stored_dtypes(columns, categorical))
    yield from _in_parts(pieces, size, columns, 0, path)


def merged_parquet_count(path: Path, columns: Sequence[str]) -> int:
    """The windows of a merged Parquet split, from its inputCol column alone."""
    from sequifier.data.stored_tables import parquet_window_count  # pyarrow only for Parquet/CSV files

    return parquet_window_count(Path(path), list(columns))


def _in_parts(
    pieces: Iterator[StoredWindows], size: int, columns: list[str], window_length: int, path: Path
) -> Iterator[StoredWindows]:
    """The windows of `pieces` regrouped `size` at a time (the last part may hold fewer), each part checked."""
    pending: list[StoredWindows] = []
    held = 0
    for piece in pieces:
        offset = 0
        while offset < len(piece):
            taken = min(size - held, len(piece) - offset)
            pending.append(piece.sliced(offset, offset + taken))
            held, offset = held + taken, offset + taken
            if held == size:
                yield _checked_part(pending, columns, window_length, path)
                pending, held = [], 0
        del piece
    if pending:
        yield _checked_part(pending, columns, window_length, path)


def _checked_part(pieces: list[StoredWindows], columns: list[str], window_length: int, path: Path) -> StoredWindows:
    part = concat_windows(pieces, columns, window_length)
    check_bookkeeping(part, str(path))
    return part
