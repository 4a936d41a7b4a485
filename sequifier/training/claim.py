"""A training run's claim on its outputs: models/, logs/<model>/ and checkpoints/<model>/ take files, no other
process trains the same model name of the project at the same time, and no other model name's run wrote the logs
folders (and so the model files) of its artifact names.

All are settled before any data is loaded, so a run that could not keep its results never starts. The claim is
an exclusive lock (flock) on the checkpoint folder, held for the run and released by the kernel however the
process ends: a killed run leaves no stale claim. Where the file system has no such locks, the run goes on unlocked.
Each logs folder records the model name whose run writes it (OWNER_FILE): a multi-dataset run's artifacts are
named `<model>-<dataset>`, which a single-dataset model of that name would otherwise overwrite.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sequifier.atomic import temp_path_for, write_text_atomic
from sequifier.config.entries import link_to_nothing, nearest_existing
from sequifier.config.errors import UserError, os_problem
from sequifier.config.resolve import RunSpec
from sequifier.folder_lock import locked_at_once
from sequifier.training.checkpoint import checkpoint_dir

OWNER_FILE = ".model_name"


def output_folders(spec: RunSpec) -> tuple[Path, ...]:
    return spec.models_dir, spec.logs_dir, checkpoint_dir(spec.project_root, spec.model_name)


def check_writable(folder: Path) -> None:
    """`folder`, or the closest folder above it that exists (where it will be made), takes a file; UserError
    naming `folder` when it does not. Nothing is created but a file that is removed again."""
    existing = nearest_existing(folder)
    if link := link_to_nothing(existing):
        raise UserError(str(folder), f"training writes its outputs here, but {existing} is {link}")
    try:
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{existing} is not a folder")
        probe = temp_path_for(existing / "write-check")
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise UserError(str(folder), f"training writes its outputs here and cannot ({os_problem(error)})") from None


def _refuse_folders_named_as_checkpoints(folder: Path) -> None:
    """A folder where a checkpoint file goes would stop the run at its first snapshot, after an epoch's work."""
    for entry in sorted(folder.glob("*.pt")):
        if entry.is_dir():
            raise UserError(str(entry), "is a folder where training writes a checkpoint file; move it away")


@contextmanager
def claimed_outputs(spec: RunSpec, writes: bool) -> Iterator[None]:
    """While open, this process holds the model name's outputs; `writes` False (ranks that write nothing): no claim."""
    if not writes:
        yield
        return
    folders = output_folders(spec)
    for folder in folders:
        check_writable(folder)
    created = not folders[-1].exists()
    folders[-1].mkdir(parents=True, exist_ok=True)  # the folder the lock is taken on
    _refuse_folders_named_as_checkpoints(folders[-1])
    descriptor = os.open(folders[-1], os.O_RDONLY)
    held = False  # a folder another run locked stays, even where this run saw it missing a moment before
    try:
        if not locked_at_once(descriptor, fcntl.LOCK_EX):
            raise UserError(
                "model_name",
                f"{spec.model_name!r} is being trained by another process of this project ({folders[-1]} is locked); "
                "wait for it to end, or choose another model_name",
            )
        held = True
        _own_logs_folders(spec)
        yield
    finally:
        os.close(descriptor)
        if created and held:
            with contextlib.suppress(OSError):
                folders[-1].rmdir()  # only when empty: a run refused before its first checkpoint leaves no folder


def _own_logs_folders(spec: RunSpec) -> None:
    """Record this run's model name in its logs folders, refusing one that another model name's run recorded."""
    folders = dict.fromkeys([spec.logs_dir, *(spec.dataset_view(d).logs_dir for d in spec.config.dataset_training)])
    for folder in folders:
        owner_file = folder / OWNER_FILE
        owner = owner_file.read_text(encoding="utf-8", errors="replace").strip() if owner_file.is_file() else None
        if owner == "":
            raise UserError(
                str(owner_file),
                f"is empty, so it no longer names the model whose run wrote {folder}; write that model's name into "
                f"it (when that is this run's {spec.model_name!r}, deleting the file lets this run go on too)",
            )
        if owner is not None and owner != spec.model_name:
            raise UserError(
                "model_name",
                f"{folder} holds the logs and names the models of the run of model {owner!r} (a multi-dataset run "
                f"names its datasets' artifacts <model>-<dataset>), which this run of {spec.model_name!r} would "
                "overwrite; choose another model_name",
            )
    for folder in folders:
        if not (folder / OWNER_FILE).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            write_text_atomic(folder / OWNER_FILE, spec.model_name + "\n")
