"""The folder Hydra keeps a train command's record in (outputs/<date>/<time>, or the sweep's folder): checked
before Hydra runs, whose own failure to make or write it would be a traceback, and made here when it is ours,
so that two commands started in the same second get a folder each."""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sequifier.commands.sweep import foreign_record_files
from sequifier.config.compose import TrainEntry, hydra_config, hydra_quoted, last_value
from sequifier.config.entries import link_to_nothing, nearest_existing
from sequifier.config.errors import UserError, os_problem
from sequifier.folder_lock import locked_at_once

FREE_BYTES_NEEDED = 256 * 2**10  # Hydra's config files and the first lines of the log


FOLDER_KEYS = ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir")
MADE_FOR_A_RUN: set[Path] = set()  # the record folders this process made for single runs


def check_working_folder() -> None:
    """Hydra records the folder a command runs in (hydra.runtime.cwd) in its config, which reads '${' there as an
    interpolation: one it cannot parse fails inside Hydra, one it can would be resolved."""
    working = os.getcwd()
    if "${" in working:
        raise UserError(
            working,
            "Hydra reads '${' in the path of the folder a train command runs in as an interpolation of its config; "
            "run it from a folder whose path has no '${'",
        )


def resolved_folder_settings(entry: TrainEntry, overrides: list[str]) -> dict[str, str]:
    """The record folder settings the overrides give, their interpolations resolved as for a job numbered 0. Every
    interpolation in a `hydra.*` override is resolved so: one that cannot be would fail inside Hydra as a
    traceback, a sweep's only after its jobs ran."""
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import OmegaConfBaseException

    keys = dict.fromkeys(
        [*FOLDER_KEYS, *(o.lstrip("+").split("=", 1)[0] for o in overrides if o.lstrip("+").startswith("hydra."))]
    )
    chosen = {key: last_value(overrides, key) for key in keys}
    resolved = {key: value for key, value in chosen.items() if value is not None}
    interpolated = [key for key, value in resolved.items() if "${" in value]
    if interpolated:
        composed = hydra_config(entry, overrides)
        with open_dict(composed):
            composed.hydra.job.num, composed.hydra.job.id = 0, "0"
    for key in interpolated:
        try:
            resolved[key] = str(OmegaConf.select(composed, key, throw_on_missing=True))
        except OmegaConfBaseException as error:
            problem = " ".join(str(error).split("\n")[0].split())
            raise UserError(key, f"cannot resolve the interpolation in {chosen[key]}: {problem}") from None
    return {key: value for key, value in resolved.items() if key in FOLDER_KEYS}


def run_folder_settings(resolved: dict[str, str]) -> tuple[str, ...]:
    """The hydra.run.dir setting of a single run: the user's (`resolved_folder_settings`), checked, or a new
    outputs/<date>/<time>."""
    chosen = resolved.get("hydra.run.dir")
    if chosen is not None:
        _check_chosen(chosen, "hydra.run.dir")
        return ()
    folder = _new_folder(Path.cwd() / "outputs", "hydra.run.dir")
    MADE_FOR_A_RUN.add(folder.resolve())
    return (f"hydra.run.dir={hydra_quoted(str(folder))}",)


def remove_unused_record(folder: Path) -> None:
    """A record folder this process made for a run that was refused before it logged a line (its folder holds
    Hydra's config files and empty logs only): removed, and the date and outputs folders above it where they are
    left empty."""
    folder = folder.resolve()
    if folder not in MADE_FOR_A_RUN:
        return
    try:
        entries = list(folder.iterdir())
        if not all(e.name == ".hydra" or (e.suffix == ".log" and e.stat().st_size == 0) for e in entries):
            return
        shutil.rmtree(folder)
        folder.parent.rmdir()
        folder.parent.parent.rmdir()
    except OSError:
        pass  # kept, or the date folder holds other records


def check_chosen_folder(resolved: dict[str, str], multirun: bool) -> None:
    """The record folder the overrides choose (`resolved_folder_settings`), checked as a run would check it, for
    `--cfg job`, which makes none."""
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    if key in resolved:
        _check_chosen(resolved[key], key)


def sweep_folder(resolved: dict[str, str]) -> Path:
    """The folder of a sweep: the user's hydra.sweep.dir (`resolved_folder_settings`), checked, or a new
    multirun/<date>/<time>."""
    chosen = resolved.get("hydra.sweep.dir")
    if chosen is not None:
        return _check_chosen(chosen, "hydra.sweep.dir")
    return _new_folder(Path.cwd() / "multirun", "hydra.sweep.dir")


@contextmanager
def sweep_folder_held(folder: Path) -> Iterator[None]:
    """While open, no other sequifier sweep runs into `folder`: its jobs' folders (0/, 1/, ...) and records would
    be this sweep's, each command's summary losing jobs to the other. An exclusive flock on the folder, released by
    the kernel however the command ends; where the file system has no such locks, sweeps go on unlocked."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise UserError("hydra.sweep.dir", f"{folder}: cannot make the sweep's folder ({os_problem(error)})") from None
    try:
        if not locked_at_once(descriptor, fcntl.LOCK_EX):
            raise UserError(
                "hydra.sweep.dir",
                f"{folder} is the folder of another sweep running now, whose jobs' folders and records this one "
                "would write over; choose another hydra.sweep.dir, or wait for that sweep to end",
            )
        yield
    finally:
        os.close(descriptor)


def _check_chosen(chosen: str, key: str) -> Path:
    if not _unquoted(chosen).strip():
        raise UserError(key, "is empty; give the folder for the run's record (it would be the working folder)")
    folder = Path.cwd() / _unquoted(chosen)
    _check_can_hold(folder, nearest_existing(folder), key)
    foreign = foreign_record_files(folder)
    if foreign:
        raise UserError(
            key,
            f"{folder} holds {foreign[0].name}, which sequifier did not write and the record would replace; choose "
            "another folder for the record (or move that file)",
        )
    return folder


def _unquoted(value: str) -> str:
    quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""
    return value[1:-1] if quoted else value


def _check_can_hold(folder: Path, existing: Path, key: str) -> None:
    """`existing` (`folder`, or its nearest parent that exists) can hold the record."""
    if not existing.is_dir():
        what = link_to_nothing(existing) or "a file, not a folder"
        raise UserError(key, f"{folder}: {existing} is {what}, so the run's record cannot go there")
    if not os.access(existing, os.W_OK | os.X_OK):
        cause = "a read-only file system" if os.statvfs(existing).f_flag & os.ST_RDONLY else "not writable"
        raise UserError(key, f"{folder}: {existing} is {cause}, so the run's record cannot go there")
    usage = shutil.disk_usage(existing)
    if usage.total == 0:
        raise UserError(key, f"{folder}: {existing} is on a file system that stores no files (as /proc and /sys are)")
    free = usage.free
    if free < FREE_BYTES_NEEDED:
        raise UserError(
            key, f"{folder}: no space left on device ({free >> 10} KiB free) for the run's record, let alone its models"
        )


def _new_folder(parent: Path, key: str) -> Path:
    """parent/<date>/<time>, or <time>-2, -3, ... when a command of the same second has it."""
    day, moment = time.strftime("%Y-%m-%d"), time.strftime("%H-%M-%S")
    folder = parent / day / moment
    _check_can_hold(folder, nearest_existing(folder), key)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        for number in range(1, 1000):
            candidate = folder if number == 1 else folder.with_name(f"{moment}-{number}")
            try:
                candidate.mkdir()
                return candidate
            except FileExistsError:
                continue
    except OSError as error:
        raise UserError(key, f"{folder}: cannot make the run's record folder ({os_problem(error)})") from None
    raise UserError(key, f"{folder}: a thousand commands of this second already have their folders here")
