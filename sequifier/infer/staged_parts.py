"""A model's inference outputs, written into hidden folders beside their final ones and moved in once all are written.

An error or an interruption while predicting leaves the previous outputs of every kind as they were; one while
the parts are moved in waits until they all are. Staging
folders are temps of the final folders (atomic.temp_path_for): one that a killed run left is removed by the
next run of the same model, whichever kinds it writes. Once in place, a folder holds this run's part files only:
runs that place parts at once take turns, so the last one's set is whole.
"""

from __future__ import annotations

import fcntl
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sequifier.atomic import remove_path, remove_stale_temps, replace_durably, temp_path_for
from sequifier.config.entries import link_to_nothing
from sequifier.config.errors import UserError
from sequifier.deferred_signals import signals_deferred
from sequifier.infer.outputs import OUTPUT_KINDS

PART_NAME = re.compile(r"part-[0-9]+\.(csv|parquet)")


class StagedParts:
    """Part files of one model under outputs/<kind>/<model>[/<target>], staged per kind until `place`."""

    def __init__(self, outputs: Path, model: str):
        self.outputs = outputs
        self.model = model
        self.stages: dict[str, Path] = {}
        self.parts: list[tuple[Path, Path]] = []  # (staged file, final file)
        for kind in OUTPUT_KINDS:  # also the kinds this run does not write
            remove_stale_temps(outputs / kind / model)

    def path(self, kind: str, target: str, name: str) -> Path:
        """Where to write part `name` of `kind` (and `target`, for probabilities); its folders exist."""
        if kind not in self.stages:
            _refuse_what_is_in_the_way(self.outputs / kind, self.outputs.parent)
            self.stages[kind] = temp_path_for(self.outputs / kind / self.model)
        staged = self.stages[kind] / target / name
        staged.parent.mkdir(parents=True, exist_ok=True)
        self.parts.append((staged, self.outputs / kind / self.model / target / name))
        return staged

    @contextmanager
    def placing_alone(self) -> Iterator[None]:
        """While active, no other infer run of this project places parts (an exclusive lock on outputs/, released
        by the kernel however the process ends): two runs of one model would each remove the parts the other placed.
        The wait lasts as long as another run's moves. Where the file system has no such locks, runs go unlocked."""
        self.outputs.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.outputs, os.O_RDONLY)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            except OSError:
                pass  # no locks here (flock as NFS emulates it may refuse)
            yield
        finally:
            os.close(descriptor)

    def check_placeable(self) -> None:
        """Refuse, before any part moves, what would stop the moves halfway: anything in the way of a part file or
        of its folders (a UserError), and a folder that takes no new file (read-only, immutable: an OSError naming
        the folder)."""
        for _, final in self.parts:
            if final.exists() and not final.is_file():
                raise UserError(str(final), "is in the way of a part file of this run (not a file); move it away")
        for folder in self._final_folders():
            _refuse_what_is_in_the_way(folder, self.outputs)
        for folder in self._final_folders():
            folder.mkdir(parents=True, exist_ok=True)
            _check_takes_files(folder)

    def place(self) -> list[Path]:
        """Move every staged part to its final name in place of the parts of earlier runs there; the final paths.

        All or nothing: the earlier parts are first moved aside (a part that cannot be moved, such as an immutable
        one, stops the run before anything of it is placed), and a failure puts them back. Ctrl-C, SIGTERM and
        SIGHUP wait until the last move: a stop leaves this run's outputs whole, in place, and then ends the run
        as it would have.
        """
        with signals_deferred():
            for folder in self._final_folders():
                _remove_stale_backups(folder)
            earlier = sorted(old for folder in self._final_folders() for old in folder.glob("part-*.*"))
            aside = _moved_aside([old for old in earlier if _is_part_file(old)])
            placed: list[Path] = []
            try:
                for staged, final in self.parts:
                    replace_durably(staged, final)
                    placed.append(final)
            except BaseException:
                for final in placed:
                    final.unlink(missing_ok=True)
                _put_back(aside)
                raise
            for backup in aside.values():
                backup.unlink(missing_ok=True)
        return [final for _, final in self.parts]

    def _final_folders(self) -> set[Path]:
        return {final.parent for _, final in self.parts}

    def discard(self) -> None:
        """Remove the staging folders and whatever is still in them."""
        for stage in self.stages.values():
            remove_path(stage)


def _moved_aside(parts: list[Path]) -> dict[Path, Path]:
    """Each part renamed to a hidden backup beside it (part -> backup); on a failure the ones moved are put back
    and the error names the part that could not move."""
    aside: dict[Path, Path] = {}
    for part in parts:
        backup = temp_path_for(part)
        try:
            os.rename(part, backup)
        except OSError as refused:
            _put_back(aside)
            raise OSError(refused.errno, refused.strerror, str(part)) from None
        aside[part] = backup
    return aside


def _put_back(aside: dict[Path, Path]) -> None:
    for part, backup in aside.items():
        os.rename(backup, part)


BACKUP_NAME = re.compile(r"\.(part-[0-9]+\.(csv|parquet))\..+\.tmp")


def _remove_stale_backups(folder: Path) -> None:
    """Backups of earlier parts that a run killed while placing its parts left in `folder`."""
    for entry in folder.iterdir():
        match = BACKUP_NAME.fullmatch(entry.name)
        if match:
            remove_stale_temps(folder / match.group(1))


def _check_takes_files(folder: Path) -> None:
    probe = temp_path_for(folder / "part")
    try:
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as refused:
        raise OSError(refused.errno, refused.strerror, str(folder)) from None


def _is_part_file(path: Path) -> bool:
    """A part file a run writes (part-<digits>.<format>), not another file or folder of the user's."""
    return bool(PART_NAME.fullmatch(path.name)) and not path.is_dir()


def _refuse_what_is_in_the_way(folder: Path, outputs: Path) -> None:
    """A file or a link to nothing where `folder` or a folder between it and `outputs` goes."""
    for level in [*reversed(folder.relative_to(outputs).parents), folder.relative_to(outputs)]:
        path = outputs / level
        if os.path.lexists(path) and not path.is_dir():
            what = link_to_nothing(path) or "a file"
            raise UserError(str(path), f"is in the way of this run's output folder ({what}); move it away")
