"""Output forms: names of split files/folders and shards, per-task writing, and assembling merged splits from parts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq

from sequifier.data.csv_meanings import meanings_file, write_meanings_file
from sequifier.data.fingerprint import KEY as MEANINGS_KEY
from sequifier.data.folder_metadata import CONTENT_DIGEST, FOLDER_METADATA
from sequifier.data.pt_shards import content_digest, pt_payload
from sequifier.data.stored_tables import WINDOW_LENGTH_KEY, not_stored_windows, stored_schema, windows_to_table
from sequifier.data.stored_windows import StoredWindows


@dataclass(frozen=True)
class OutputForm:
    """Where and how splits are written: merged parquet/csv files or parquet/pt shard folders."""

    write_format: str
    merged: bool
    data_name: str
    stage: Path  # staged outputs carry their final names
    parts: Path  # merged form: per-task parts before assembly
    column_types: dict[str, str]
    window_length: int
    windows_per_shard: Optional[int] = None  # depth layouts: shards of at most this many windows (3.x's naming)
    recorded_meanings: Optional[dict[bytes, bytes]] = None  # of merged splits: Parquet metadata, or beside a CSV

    def split_name(self, split: int) -> str:
        base = f"{self.data_name}-split{split}"
        return f"{base}.{self.write_format}" if self.merged else base

    def companion_names(self, split: int) -> list[str]:
        """Files written beside split `split` that move with it: a merged CSV split's recorded meanings."""
        if self.merged and self.write_format == "csv":
            return [meanings_file(Path(self.split_name(split))).name]
        return []

    def foreign_target(self, target: Path, split: int) -> Optional[str]:
        """Why `target`, where split `split` goes, holds something this form's earlier output would not; None if
        it holds nothing or such an output (a shard folder holds its metadata and shards and nothing else)."""
        if not os.path.lexists(target):
            return None
        if self.merged:
            if not target.is_file():
                return "is a folder or other entry, not an earlier split file"
            problem = not_stored_windows(target)
            return None if problem is None else f"is not an earlier split file: it {problem}"
        if not target.is_dir() or target.is_symlink():
            return "is a file or link, not an earlier split folder"
        own = f"{self.data_name}-split{split}-"
        foreign = sorted(
            entry.name
            for entry in target.iterdir()
            if not (entry.name == FOLDER_METADATA or (entry.name.startswith(own) and entry.is_file()))
        )
        if foreign:
            return f"is not only an earlier split folder: it holds {', '.join(foreign[:3])}" + (
                f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
            )
        return None

    def shard_name(self, split: int, task: int, part: int = 0) -> str:
        if self.windows_per_shard is not None:
            return f"{self.data_name}-split{split}-{task}-{part:08d}.{self.write_format}"
        return f"{self.data_name}-split{split}-{task}-00.{self.write_format}"


def _first_seen_histogram(values: np.ndarray) -> dict[str, int]:
    """Counts per value, keys as strings in order of first appearance."""
    distinct, first, counts = np.unique(values, return_index=True, return_counts=True)
    order = np.argsort(first)
    return {str(int(distinct[i])): int(counts[i]) for i in order}


def write_task_split(form: OutputForm, split: int, task: int, windows: StoredWindows) -> list[dict]:
    """Write one task's windows of one split: a part (merged form) or shards. Returns their entries (none when empty).

    A shard entry is a folder metadata.json batch_files entry. Windows hold only items of
    their split, so targets are valid from the first non-padding slot.
    """
    if len(windows) == 0:
        return []
    if form.merged:
        path = form.parts / f"split{split}-{task:06d}.arrow"
        path.parent.mkdir(parents=True, exist_ok=True)
        table = windows_to_table(windows, list(form.column_types))
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return [{"path": str(path), "samples": len(windows)}]
    size = form.windows_per_shard or len(windows)
    return [
        _write_shard(form, split, form.shard_name(split, task, part), windows.sliced(start, start + size))
        for part, start in enumerate(range(0, len(windows), size))
    ]


def _write_shard(form: OutputForm, split: int, name: str, windows: StoredWindows) -> dict:
    folder = form.stage / form.split_name(split)
    folder.mkdir(parents=True, exist_ok=True)
    if form.write_format == "pt":
        import torch

        torch.save(pt_payload(windows, form.column_types), folder / name)
    else:
        table = windows_to_table(windows, list(form.column_types))
        if meanings := (form.recorded_meanings or {}).get(MEANINGS_KEY):
            table = table.replace_schema_metadata({**table.schema.metadata, MEANINGS_KEY: meanings})
        pq.write_table(table, folder / name, write_page_checksum=True)
    histogram = _first_seen_histogram(windows.left_pad_lengths)
    digest = {CONTENT_DIGEST: content_digest(folder / name)} if form.write_format == "pt" else {}
    return {
        "path": name,
        "samples": len(windows),
        "left_pad_length_histogram": histogram,
        "target_valid_from_histogram": dict(histogram),
        **digest,
    }


class MergedSplitWriter:
    """Appends parts, in task order, to one staged parquet or csv file."""

    def __init__(self, form: OutputForm, split: int):
        self.form = form
        self.path = form.stage / form.split_name(split)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        schema = stored_schema(form.window_length)
        if form.recorded_meanings is not None and form.write_format == "parquet":
            schema = schema.with_metadata({**schema.metadata, **form.recorded_meanings})
        self.samples = 0
        if form.write_format == "csv":
            self.writer = pv.CSVWriter(str(self.path), schema)
        else:
            self.writer = pq.ParquetWriter(str(self.path), schema, write_page_checksum=True)

    def append(self, entry: dict) -> None:
        part = Path(entry["path"])
        with pa.OSFile(str(part)) as handle:
            table = pa.ipc.open_file(handle).read_all()
        self.writer.write_table(table)
        self.samples += entry["samples"]
        part.unlink()

    def close(self) -> None:
        self.writer.close()
        if self.form.write_format == "csv" and self.form.recorded_meanings is not None:
            window_length = str(self.form.window_length).encode("ascii")
            write_meanings_file(self.path, {**self.form.recorded_meanings, WINDOW_LENGTH_KEY: window_length})
