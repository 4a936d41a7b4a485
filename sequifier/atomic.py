"""Atomic, durable writes of every file the project writes: temp file next to the target, fsync, rename over it.

A temp of `folder/name` is `folder/.name.<host>.<pid>.<random>.tmp`: in the target's folder (same file
system, so the rename is atomic) and naming the process that writes it. A temp whose process no longer
exists on this host (killed with SIGKILL, power lost) is removed by the next write of the same target.
POSIX only: liveness is checked with signal 0, folders are synced through a descriptor.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import shutil
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

LONGEST_TEMP_STEM = 150  # bytes of a target's name in its temps' names: 255 less a host name's 64 and the rest


def _host() -> str:
    """This machine's name with anything but letters, digits and dashes replaced, so it parses out of a temp name."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _temp_stem(name: str) -> str:
    """`name` as temps of it spell it: shortened, with a digest of the whole, where the temp's suffix would
    take the temp name past the 255 bytes a file name may have."""
    if len(name.encode()) <= LONGEST_TEMP_STEM:
        return name
    kept = name.encode()[: LONGEST_TEMP_STEM - 17].decode(errors="ignore")
    return f"{kept}~{hashlib.sha256(name.encode()).hexdigest()[:16]}"


def temp_path_for(path: Path) -> Path:
    """A fresh temp path next to `path`, naming this host and process."""
    path = Path(path)
    return path.with_name(f".{_temp_stem(path.name)}.{_host()}.{os.getpid()}.{secrets.token_hex(6)}.tmp")


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, run by another user
    return True


def remove_path(path: Path) -> None:
    """Remove a file or a folder tree, if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        path.unlink()
    except OSError as error:
        # a file where a folder of the path should be, or a read-only file system: nothing of ours is there
        if error.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EROFS):
            raise


def _temp_names_of(name: str) -> re.Pattern:
    """Temp names of a target named `name`; the groups are the host and the process id."""
    return re.compile(re.escape(f".{_temp_stem(name)}.") + r"([A-Za-z0-9-]+)\.(\d{1,9})\.[0-9a-f]+\.tmp")


def is_temp_of(candidate: Path, path: Path) -> bool:
    """Whether `candidate` is a temp of `path`: beside it and named as `temp_path_for` names them."""
    candidate, path = Path(os.path.abspath(candidate)), Path(os.path.abspath(path))
    return candidate.parent == path.parent and _temp_names_of(path.name).fullmatch(candidate.name) is not None


def remove_stale_temps(path: Path) -> None:
    """Remove temps of `path` (files or folders) left by processes of this host that no longer exist."""
    path = Path(path)
    if not path.parent.is_dir():
        return
    prefix = f".{_temp_stem(path.name)}."
    pattern = _temp_names_of(path.name)
    host = _host()
    with os.scandir(path.parent) as entries:
        candidates = [entry.name for entry in entries if entry.name.startswith(prefix)]
    for name in candidates:
        match = pattern.fullmatch(name)
        if match and match.group(1) == host and not process_exists(int(match.group(2))):
            remove_path(path.parent / name)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError as error:
        if not (error.errno == errno.EINVAL and path.is_dir()):  # some file systems cannot sync a folder
            raise
    finally:
        os.close(descriptor)


def _sync_contents(path: Path) -> None:
    """Flush a file, or a folder with everything in it, to disk."""
    if path.is_dir():
        for child in path.iterdir():
            _sync_contents(child)
    _fsync(path)


def replace_durably(source: Path, target: Path) -> None:
    """Rename `source` (a file or a folder) over `target` once its contents are on disk, then sync the rename."""
    _sync_contents(Path(source))
    os.replace(source, target)
    _fsync(Path(target).parent)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temp path for a writer to create; on success it replaces `path` durably, on any failure it is removed.

    Readers of `path` see either its old content or the complete new one, never a partial file. A file system
    error is raised naming `path`, not the temp.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    temporary = temp_path_for(path)
    try:
        yield temporary
        replace_durably(temporary, path)
    except BaseException as error:
        try:
            remove_path(temporary)
        except OSError:
            pass  # the error that stopped the write is the one to report
        if isinstance(error, OSError) and error.errno is not None:
            raise OSError(error.errno, error.strerror, str(path)) from None
        raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))
