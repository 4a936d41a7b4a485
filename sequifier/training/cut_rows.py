"""The rows a resume cuts from a metric file, kept beside it until the run's own checkpoint replaces `latest.pt`.

A resume cuts each metric file back to its length at the checkpoint it continues from. Where that checkpoint is
older than the folder's `latest.pt`, the rows cut belong to `latest.pt`'s run: a resume killed before its first
checkpoint would leave them lost beside a `latest.pt` that still counts them. So the whole file is first copied
to `.<name>.uncut-<latest.pt's identity>`; the next run puts it back while `latest.pt` is still that file, and the
copy is removed once this run's checkpoint has replaced it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sequifier.atomic import atomic_path, remove_path, replace_durably

MARK = ".uncut-"


def identity(latest: Path) -> str:
    """What tells one `latest.pt` from the next: a new write is a new file (another inode, size or time)."""
    try:
        stat = os.stat(latest)
    except FileNotFoundError:
        return "none"
    return f"{stat.st_ino}-{stat.st_size}-{stat.st_mtime_ns}"


def _copies(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}{MARK}*"))


def put_back_cut_rows(path: Path, latest: Path) -> None:
    """Before a run opens `path`: restore the rows an earlier resume cut from it if that resume died before its
    first checkpoint (`latest` is the same file as then); drop copies of resumes that got that far."""
    now = identity(latest)
    for copy in _copies(path):
        if copy.name.endswith(MARK + now):
            replace_durably(copy, path)
        else:
            remove_path(copy)


def keep_cut_rows(path: Path, latest: Path) -> None:
    """Copy `path` whole before a resume cuts it, tagged with the `latest.pt` whose rows it holds."""
    with atomic_path(path.parent / f".{path.name}{MARK}{identity(latest)}") as temporary:
        shutil.copyfile(path, temporary)


def drop_cut_rows(path: Path) -> None:
    """After this run's checkpoint replaced `latest.pt`: the rows cut are no longer any checkpoint's."""
    for copy in _copies(path):
        remove_path(copy)
