"""Loading PT files that may come from anywhere: torch.load with weights_only=True, every failure one line."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

from sequifier.config.errors import UserError, os_problem

# torch wraps the unpickler's finding in advice lines; these start them.
_ADVICE = ("Weights only load failed", "Please file an issue", "Check the documentation")


def _finding(error: pickle.UnpicklingError) -> str:
    lines = [line.strip() for line in str(error).splitlines()]
    found = [line for line in lines if line and not line.startswith(_ADVICE)]
    return (found[0] if found else type(error).__name__)[:200]


def load_weights_only(path: Path, what: str) -> Any:
    """The data of the PT file `path` (a `what`, for messages); no code in it runs.

    UserError naming the file: for a pickle the safe unpickler refuses (objects other than tensors
    and plain data, or bytes that are no pickle at all), and for every other reason it cannot be read.
    """
    import torch

    if path.is_file() and path.stat().st_size == 0:
        raise UserError(str(path), f"not a readable {what}: the file is empty (0 bytes)")
    _check_sums(path, what)
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except OSError as error:  # gone or unreadable since it was listed
        raise UserError(str(path), f"cannot read this {what}: {os_problem(error)}") from None
    except pickle.UnpicklingError as error:
        raise UserError(
            str(path), f"not a readable {what}: unpickling with weights_only=True failed ({_finding(error)})"
        ) from None
    except Exception as error:  # a damaged zip or pickle raises many kinds of errors
        if not zipfile.is_zipfile(path):  # torch's loader of its legacy format then names a byte it did not expect
            raise UserError(
                str(path), f"not a readable {what}: not a PyTorch file (no zip archive as torch.save writes)"
            ) from None
        if not _has_version_record(path):
            raise UserError(
                str(path), f"not a readable {what}: a zip archive, but not one torch.save wrote (no version record)"
            ) from None
        said = " ".join(str(error).split())[:200] or type(error).__name__
        raise UserError(str(path), f"not a readable {what} ({said})") from None


def _has_version_record(path: Path) -> bool:
    """Whether the zip archive at `path` holds the `version` record every archive of torch.save holds."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.rsplit("/", 1)[-1] == "version" for name in archive.namelist())
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return True  # not a readable archive: the caller's own message says more


def _check_sums(path: Path, what: str) -> None:
    """torch.save's archive keeps a CRC-32 of each part, which torch.load does not check: damaged bytes would
    load as other weights. Files that are no zip archive are left to torch.load's own error."""
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except zipfile.BadZipFile:
        with open(path, "rb") as handle:
            begins_as_archive = handle.read(4) == b"PK\x03\x04"
        if begins_as_archive:  # torch would say "Invalid argument"
            raise UserError(
                str(path), f"not a readable {what}: the archive is cut short or damaged (no index at its end)"
            ) from None
        return
    except (OSError, EOFError, ValueError):
        return
    if damaged is not None:
        part = damaged.split("/", 1)[-1]  # without the archive's folder, named after the file torch.save wrote
        raise UserError(str(path), f"not a readable {what}: its part {part!r} fails its checksum (the file is damaged)")
