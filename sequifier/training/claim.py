"""A training run's claim on its outputs: models/, logs/<model>/ and checkpoints/<model>/ take files, and no other
process trains the same model name of the project at the same time.

Both are settled before any data is loaded, so a run that could not keep its results never starts. The claim is
an exclusive lock (flock) on the checkpoint folder, held for the run and released by the kernel however the
process ends: a killed run leaves no stale claim. Where the file system has no such locks, the run goes on unlocked.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sequifier.atomic import temp_path_for
from sequifier.config.errors import UserError, os_problem
from sequifier.config.resolve import RunSpec
from sequifier.training.checkpoint import checkpoint_dir

logger = logging.getLogger("sequifier")


def output_folders(spec: RunSpec) -> tuple[Path, ...]:
    return spec.models_dir, spec.logs_dir, checkpoint_dir(spec.project_root, spec.model_name)


def check_writable(folder: Path) -> None:
    """`folder`, or the closest folder above it that exists (where it will be made), takes a file; UserError
    naming `folder` when it does not. Nothing is created but a file that is removed again."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{existing} is not a folder")
        probe = temp_path_for(existing / "write-check")
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise UserError(str(folder), f"training writes its outputs here and cannot ({os_problem(error)})") from None


@contextmanager
def claimed_outputs(spec: RunSpec, writes: bool) -> Iterator[None]:
    """While open, this process holds the model name's outputs; `writes` False (ranks that write nothing): no claim."""
    if not writes:
        yield
        return
    folders = output_folders(spec)
    for folder in folders:
        check_writable(folder)
    folders[-1].mkdir(parents=True, exist_ok=True)  # the folder the lock is taken on
    descriptor = os.open(folders[-1], os.O_RDONLY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                "model_name",
                f"{spec.model_name!r} is being trained by another process of this project ({folders[-1]} is locked); "
                "wait for it to end, or choose another model_name",
            ) from None
        except OSError as error:  # a file system without these locks (flock as NFS emulates it may refuse)
            logger.debug("no lock on %s: %s", folders[-1], error.strerror)
        yield
    finally:
        os.close(descriptor)
