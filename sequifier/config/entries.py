"""What stands at a path the project reads or writes: the nearest entry above a path that does not exist yet,
and how a message names a link to nothing."""

from __future__ import annotations

import os
from pathlib import Path


def nearest_existing(path: Path) -> Path:
    """`path`, or the closest folder above it that exists (a link to nothing counts as existing)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def link_to_nothing(path: Path) -> str | None:
    """'a link to TARGET, which does not exist' when `path` is such a link, else None."""
    if path.is_symlink() and not path.exists():
        return f"a link to {os.readlink(path)}, which does not exist"
    return None


def not_utf8(text: str) -> bool:
    """`text` came from bytes that are not UTF-8 (a file name or argument Python decoded with surrogate escapes)."""
    return any("\udc80" <= character <= "\udcff" for character in text)


def shown(text: str) -> str:
    """`text` printable, each byte that is not UTF-8 shown as '?'."""
    return "".join("?" if "\udc80" <= character <= "\udcff" else character for character in text)
