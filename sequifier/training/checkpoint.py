"""Checkpoint files under checkpoints/<model>/: epoch and batch snapshots and the rolling `latest.pt`.

Each is written atomically (sequifier/atomic.py) and read with `torch.load(weights_only=True)`, so a
file that carries code is refused without running it. A file of another format or version is
refused whole, never half-loaded. Each carries the SHA-256 digest of its state (every key, value and
tensor byte), checked on reading, so damage that still unpickles is refused instead of resumed from;
checkpoints written before the digest existed are read without it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import resource
import shutil
from pathlib import Path
from typing import Any

import torch

from sequifier.atomic import atomic_path
from sequifier.config.compose import typed_override
from sequifier.config.errors import UserError, file_system_error
from sequifier.data.safe_load import load_weights_only

FORMAT = "sequifier_checkpoint"
VERSION = 1
LATEST = "latest.pt"
DIGEST = "digest"
FULL_BELOW_BYTES = 1 << 20  # free space under which a failed write is taken for a full disk


def checkpoint_dir(project_root: Path, model_name: str) -> Path:
    return project_root / "checkpoints" / model_name


def checkpoint_path(directory: Path, name: str | None) -> Path:
    """The file snapshot `name` is written to first (None: only latest)."""
    return directory / (name or LATEST)


def write_checkpoint(directory: Path, name: str | None, state: dict[str, Any]) -> Path:
    """Write the snapshot `name` (None: only latest) and refresh `latest.pt` from it; returns the file written first."""
    payload = {"format": FORMAT, "version": VERSION, **state, DIGEST: state_digest(state)}
    first = checkpoint_path(directory, name)
    with atomic_path(first) as temporary:
        _saved(payload, temporary)
    if name is not None:
        try:
            with atomic_path(directory / LATEST) as temporary:
                shutil.copyfile(first, temporary)
        except OSError as error:
            resume = f"global_training.resume.policy=required {checkpoint_path_override(first)}"
            raise file_system_error(
                error,
                f"{first} was written; once {LATEST} can be written, `sequifier train {resume}` continues from it",
            ) from None
    return first


def checkpoint_path_override(path: Path) -> str:
    """The override that resumes from `path`, as a shell takes it (a sweep job's `<model>-seed=1` needs quotes)."""
    return typed_override("global_training.resume.checkpoint_path", str(path))


def _saved(payload: dict[str, Any], path: Path) -> None:
    """torch.save, whose writer reports a short write (a full disk) as a RuntimeError, as the OSError it is."""
    try:
        torch.save(payload, path)
    except RuntimeError as error:
        if shutil.disk_usage(path.parent).free < FULL_BELOW_BYTES:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from None
        size_limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if size_limit != resource.RLIM_INFINITY and path.exists() and path.stat().st_size >= size_limit:
            reason = (
                f"{os.strerror(errno.EFBIG)} for this process's file-size limit (`ulimit -f`) of {size_limit} bytes"
            )
            raise OSError(errno.EFBIG, reason, str(path)) from None
        reason = str(error).rpartition("strerror: ")[2].strip()  # the system's reason at the end of torch's text
        code = next((code for code in errno.errorcode if os.strerror(code) == reason), None)
        if code is not None:
            raise OSError(code, reason, str(path)) from None
        raise OSError(
            errno.EIO, f"the checkpoint writer stopped: {' '.join(str(error).split())[:200]}", str(path)
        ) from None


def read_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint's state; UserError naming the file when it is unreadable, unsafe or of another format."""
    state = load_weights_only(path, "checkpoint")
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise UserError(str(path), f"not a sequifier checkpoint (format {FORMAT!r} expected)")
    if state.get("version") != VERSION:
        raise UserError(
            str(path),
            f"checkpoint version {state.get('version')!r} cannot be resumed by this sequifier (it reads {VERSION})",
        )
    written = state.pop(DIGEST, None)
    if written is not None:
        contents = {key: value for key, value in state.items() if key not in ("format", "version")}
        if written != state_digest(contents):
            raise UserError(
                str(path),
                "damaged: its contents differ from the digest written with them",
            )
    return state


def state_digest(state: Any) -> str:
    """SHA-256 of a checkpoint's state: keys sorted, values by their repr, tensors by dtype, shape and bytes."""
    hasher = hashlib.sha256()
    _feed(hasher, state)
    return hasher.hexdigest()


def _feed(hasher: Any, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        flat = value.detach().cpu().contiguous().reshape(-1)
        hasher.update(f"tensor {flat.dtype} {tuple(value.shape)}".encode())
        hasher.update(flat.view(torch.uint8).numpy())
    elif isinstance(value, dict):
        hasher.update(f"dict {len(value)}".encode())
        for key in sorted(value, key=repr):
            hasher.update(repr(key).encode())
            _feed(hasher, value[key])
    elif isinstance(value, (list, tuple)):
        hasher.update(f"sequence {len(value)}".encode())
        for item in value:
            _feed(hasher, item)
    else:
        hasher.update(f"{type(value).__name__} {value!r}".encode())
