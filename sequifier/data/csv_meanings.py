"""The file beside a merged CSV split that records what a Parquet split keeps in its key-value metadata.

CSV has no place for metadata, so preprocess writes `<split>.csv.meanings.json` beside each merged CSV split: the
fingerprint of its meanings, one digest per column, each column's kind and the window length, with the SHA-256 of
the split's bytes. A record is only believed for the bytes it was written with: a split rewritten by another writer,
or one whose record is missing, damaged or no regular file, is read as a split without one (a note says why, where
the record is there).
A split reached through a link is looked up beside the file the link points to.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import sys
from pathlib import Path

SUFFIX = ".meanings.json"
SPLIT_SHA256 = "split_sha256"
LARGEST_RECORD_BYTES = 16 * 2**20
_CHUNK_BYTES = 2**20


def meanings_file(split: Path) -> Path:
    return split.with_name(split.name + SUFFIX)


def write_meanings_file(split: Path, recorded: dict[bytes, bytes]) -> Path:
    """Record `recorded` (key-value metadata, as a Parquet split would carry it) beside the finished CSV `split`."""
    record = {SPLIT_SHA256: _sha256(split)} | {key.decode(): value.decode() for key, value in recorded.items()}
    path = meanings_file(split)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def recorded_beside(split: Path, key: bytes) -> str | None:
    """The value of `key` recorded beside the CSV split `split`; None where no record holds for its bytes."""
    target = Path(split).resolve()
    try:
        split_status, record_status = target.stat(), meanings_file(target).stat()
    except OSError:
        return None
    if not stat.S_ISREG(record_status.st_mode) or record_status.st_size > LARGEST_RECORD_BYTES:
        _unchecked(target, "is no regular file of a record's size")
        return None
    record = _record(str(target), _version(split_status), _version(record_status))
    value = record.get(key.decode()) if record is not None else None
    return value if isinstance(value, str) else None


def _version(status: os.stat_result) -> tuple[int, int, int]:
    return status.st_ino, status.st_size, status.st_mtime_ns


@functools.lru_cache(maxsize=8)
def _record(target: str, split_version: tuple, record_version: tuple) -> dict | None:
    """The record beside `target` if it holds for the file's bytes (cached per version of both files)."""
    try:
        record = json.loads(meanings_file(Path(target)).read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            _unchecked(Path(target), "holds no record (a JSON object)")
            return None
        if record.get(SPLIT_SHA256) != _sha256(Path(target)):
            _unchecked(Path(target), "was written for other bytes than the split's (edited or replaced since)")
            return None
    except (OSError, ValueError) as error:
        _unchecked(Path(target), f"cannot be read ({type(error).__name__})")
        return None
    return record


@functools.lru_cache(maxsize=8)
def _unchecked(split: Path, why: str) -> None:
    """Say, once per split and reason, that the record beside a CSV split is not used."""
    print(f"note: {meanings_file(split)} {why}, so the meanings it records are not checked", file=sys.stderr)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()
