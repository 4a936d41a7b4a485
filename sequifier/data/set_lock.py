"""Turns between a preprocess run swapping its set of outputs into a folder and the commands reading that set.

A preprocess run holds an exclusive lock (flock) on its output folder while it swaps its outputs in; train holds a
shared one while it reads and hashes its splits. So two preprocess runs never interleave their swaps, and train
never reads a set half swapped. The kernel releases a lock however its process ends; where the file system has no
such locks, runs go unlocked. A swap cut short by SIGKILL, which no lock can prevent, leaves its run's record in
the folder: `swap_cut_short` finds it for readers, and the next preprocess run repairs the set.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

from sequifier.atomic import process_exists
from sequifier.folder_lock import locked_at_once

# A preprocess run stages in a temp of this name in its output folder, with its record of the swap in it.
STAGING_NAME = "preprocess"
RECORD = "run.json"


@contextmanager
def swapping_alone(folder: Path, note: Callable[[str], None]) -> Iterator[None]:
    """While active, no other preprocess run swaps outputs into `folder` and no train run reads its splits."""
    with _locked(folder, fcntl.LOCK_EX, note, f"waiting for another command using {folder} before swapping in"):
        yield


@contextmanager
def reading_whole(folders: Iterable[Path], note: Callable[[str], None]) -> Iterator[None]:
    """While active, no preprocess run swaps outputs into any of `folders`."""
    with ExitStack() as stack:
        for folder in sorted(set(folders)):
            waiting = f"waiting for a preprocess run to finish swapping its outputs into {folder}"
            stack.enter_context(_locked(folder, fcntl.LOCK_SH, note, waiting))
        yield


@contextmanager
def _locked(folder: Path, mode: int, note: Callable[[str], None], waiting: str) -> Iterator[None]:
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield  # a folder that is not there: what reads or writes it names the problem
        return
    try:
        if not locked_at_once(descriptor, mode):
            note(waiting)
            fcntl.flock(descriptor, mode)
        yield
    finally:
        os.close(descriptor)


def staging_records(folder: Path) -> list[Path]:
    """The records of the preprocess runs staging in `folder` (live or killed), in name order."""
    return sorted(folder.glob(f".{STAGING_NAME}.*.tmp/{RECORD}"))


def swap_cut_short(folder: Path) -> str | None:
    """The record of a preprocess run of this host that was killed while it swapped its outputs into `folder`,
    some moved in and some not: the files there are then a mix of two runs. None where there is none."""
    host = socket.gethostname()
    for record_path in staging_records(folder):
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
            moved = [not os.path.lexists(record_path.parent / move["staged"]) for move in record["moves"]]
            cut = not record["committed"] and any(moved) and not all(moved)
            if cut and record["host"] == host and not process_exists(int(record["pid"])):
                return str(record_path)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue  # not a record a preprocess run wrote
    return None
