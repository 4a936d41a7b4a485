"""All-or-nothing outputs: each output is staged beside its final location, then swapped in one by one.

Split outputs are staged in a hidden folder of the output folder, the metadata JSON beside its final
path (so every rename stays on one file system, even when `data/` is a link to another disk). The
swap moves each existing target aside to a backup beside it, renames the staged output into place,
and, once all are in place, removes the backups; a failure puts every backup back. A record in the
staging folder names the owner process, the files staged beside targets and the moves of the swap,
so that the next run removes what a killed run staged and rolls back (or finishes) its swap; nothing
of a run is touched while its process exists. Runs swap in turn (data/set_lock.py), so the last one's set is whole.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from sequifier.atomic import (
    is_temp_of,
    process_exists,
    remove_path,
    remove_stale_temps,
    replace_durably,
    temp_path_for,
    write_text_atomic,
)
from sequifier.data.csv_meanings import SUFFIX as MEANINGS_SUFFIX
from sequifier.data.set_lock import RECORD, STAGING_NAME, staging_records, swapping_alone
from sequifier.deferred_signals import signals_deferred
from sequifier.preprocess.progress import log
from sequifier.preprocess.signals import exit_if_stop_requested

KEPT = "; the previous outputs are unchanged"
PLACED = "; the new outputs are in place"
# What follows the data name in the name of a split output (a file, a shard folder, a csv split's meanings).
SPLIT_OUTPUT_SUFFIX = rf"-split\d+(\.(parquet|csv|pt)({re.escape(MEANINGS_SUFFIX)})?)?"
SPLIT_OUTPUT = re.compile(".+" + SPLIT_OUTPUT_SUFFIX)


@dataclass(frozen=True)
class Move:
    """One output: where it is staged, where it goes, and where the output it replaces waits (None: nothing there)."""

    staged: str
    target: str
    backup: Optional[str]


def _backup_path(target: Path) -> Path:
    """Beside the target; not a temp of the target itself, so no atomic write of the target removes it."""
    return temp_path_for(target.with_name(target.name + ".previous"))


def _roll_back(moves: list[Move]) -> list[str]:
    """Undo the moves, newest first; returns the backups that could not be put back."""
    stuck = []
    for move in reversed(moves):
        staged, target = Path(move.staged), Path(move.target)
        if not os.path.lexists(staged) and os.path.lexists(target):
            remove_path(target)  # this run's output, already swapped in
        if move.backup is not None and os.path.lexists(move.backup):
            try:
                if os.path.lexists(target) and os.path.samefile(move.backup, target):
                    os.unlink(move.backup)  # set aside as a link and never replaced: rename would keep both names
                else:
                    os.replace(move.backup, target)
            except OSError:
                stuck.append(move.backup)
    return stuck


def _set_aside(target: Path, backup: Path) -> None:
    """Keep the output being replaced as `backup`. A file gets a second name, so that the new one replaces it in
    one rename and readers never find the name missing; a folder (which a rename cannot replace) is moved."""
    if target.is_file() and not target.is_symlink():
        try:
            os.link(target, backup)
            return
        except OSError:
            pass  # a file system without hard links
    os.replace(target, backup)


def _remove_if_there(path: Path) -> None:
    if os.path.lexists(path):  # false too where a parent is no folder
        remove_path(path)


def _finish(moves: list[Move]) -> None:
    for move in moves:
        if move.backup is not None:
            remove_path(Path(move.backup))


def recover_abandoned(output_folder: Path, metadata_folder: Path) -> None:
    """Undo what every run of this host whose process is gone left: staged files, and a swap cut short.

    Only a record whose every path is an output a preprocess of this project writes (a split in `output_folder`,
    a metadata file in `metadata_folder`), or staged or set aside for one, is applied: a record copied from
    elsewhere, or written by hand, never touches anything else.
    """
    host = socket.gethostname()
    for record_path in staging_records(output_folder):
        base = record_path.parent
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
            moves = [Move(**{key: _joined(base, value) for key, value in move.items()}) for move in record["moves"]]
            owner, pid, committed = record["host"], int(record["pid"]), record["committed"]
            beside = [_joined(base, path) for path in record["beside"]]
            real = record.get("real", {})
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue  # not a record this version wrote; the folder goes with the other stale temps
        if owner != host or process_exists(pid):
            continue
        stray = _first_stray_path(base, moves, beside, output_folder, metadata_folder)
        if stray is not None:
            log(
                f"note: {base} holds the record of a killed run that names {stray}, which is no output of this "
                "project; the record is not applied, and is removed with the rest of that run's staging folder"
            )
            continue
        moves = _own_moves(base, moves, real, output_folder)
        if committed:
            _finish(moves)
        else:
            _roll_back(moves)
        for staged in beside:  # never swapped in, or already moved away
            _remove_if_there(Path(staged))


def _own_moves(base: Path, moves: list[Move], real: dict, output_folder: Path) -> list[Move]:
    """The moves that are this project's: where the staging folder has not moved (the output folder is reached
    through a link that another project shares too), a target beside it (the metadata) that the killed run reached
    through another path is that project's own, left to its next run."""
    if real.get("base") != os.path.realpath(base):
        return moves  # the project was copied or moved with the record: its paths hold where it is now
    own = []
    for move, recorded in zip(moves, real.get("targets", [])):
        if _inside(move.target, output_folder) or os.path.realpath(move.target) == recorded:
            own.append(move)
        else:
            log(f"note: a killed run of another project that shares {output_folder} wrote {recorded}; left to it")
    return own


def _inside(path: str | Path, folder: Path) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return os.path.commonpath([path, folder]) == folder and path != folder


def _first_stray_path(
    base: Path, moves: list[Move], beside: list[str], output_folder: Path, metadata_folder: Path
) -> str | None:
    """A path of a killed run's record that is neither an output of this project, nor staged for one, nor its
    backup."""
    for move in moves:
        target = Path(move.target)
        split_output = _directly_in(target, output_folder) and SPLIT_OUTPUT.fullmatch(target.name)
        if not (split_output or _is_metadata_file(target, metadata_folder)):
            return move.target
        if not (_inside(move.staged, base) or is_temp_of(Path(move.staged), target)):
            return move.staged
        if move.backup is not None and not is_temp_of(Path(move.backup), target.with_name(target.name + ".previous")):
            return move.backup
    for path in beside:
        staged_beside = Path(path).name.startswith(".") and path.endswith(".tmp")
        if not (staged_beside and (_inside(path, output_folder) or _directly_in(Path(path), metadata_folder))):
            return path
    return None


def _directly_in(path: Path, folder: Path) -> bool:
    return os.path.dirname(os.path.abspath(path)) == os.path.abspath(folder)


def _is_metadata_file(path: Path, metadata_folder: Path) -> bool:
    return _directly_in(path, metadata_folder) and path.suffix == ".json"


def _relative(path: str | Path | None, base: Path) -> str | None:
    """`path` as a record stores it: relative to the record's folder, so that a project copied or moved with a
    killed run's record is repaired where it now is, and no other copy is touched."""
    return None if path is None else os.path.relpath(path, base)


def _joined(base: Path, path: str | None) -> str | None:
    """A recorded path read back (an absolute one as it is)."""
    return None if path is None else os.path.normpath(os.path.join(base, path))


def _created_folders(folder: Path) -> list[Path]:
    """Create `folder` with its missing parents; returns those created, deepest first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    if missing:
        missing[0].mkdir(parents=True)
    return missing


class Staging:
    """The staged outputs of one run, their swap into place, and their removal at the end."""

    def __init__(self, output_folder: Path, metadata_folder: Path):
        recover_abandoned(output_folder, metadata_folder)
        remove_stale_temps(output_folder / STAGING_NAME)
        self.created = _created_folders(output_folder)
        self.root = temp_path_for(output_folder / STAGING_NAME)
        self.spill = self.root / "spill"
        self.parts = self.root / "parts"
        self.outputs = self.root / "outputs"
        self.beside: list[Path] = []
        self.moves: list[Move] = []
        self.had_previous = False
        self.placed = False
        self.stuck: list[str] = []
        try:
            self.root.mkdir()
            self.outputs.mkdir()
            self._record(committed=False)
        except BaseException:  # a full disk, or a stop: nothing of this run stays
            self.remove()
            raise

    def reserve_beside(self, target: Path) -> Path:
        """A staged file beside `target`, created now so that an unwritable folder fails before any work is done."""
        self.had_previous = self.had_previous or os.path.lexists(target)
        self.created += _created_folders(target.parent)
        remove_stale_temps(target)
        staged = temp_path_for(target)
        self.beside.append(staged)
        self._record(committed=False)
        staged.touch(exist_ok=False)
        return staged

    def _record(self, committed: bool) -> None:
        """What the next run needs if this process is killed: the owner, the files beside targets, the swap."""
        record = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "beside": [_relative(path, self.root) for path in self.beside],
            "moves": [{key: _relative(value, self.root) for key, value in asdict(move).items()} for move in self.moves],
            "real": {
                "base": os.path.realpath(self.root),
                "targets": [os.path.realpath(move.target) for move in self.moves],
            },
            "committed": committed,
        }
        write_text_atomic(self.root / RECORD, json.dumps(record))

    def place(self, pairs: list[tuple[Path, Path]]) -> None:
        """Swap each staged output in for its target, in order; an existing file or folder is replaced whole.

        If any step fails, every target gets back what it held before and the error is raised. Ctrl-C and
        SIGTERM wait until the swap (or its rollback) is done; SIGKILL is what the journal is for.
        """
        with swapping_alone(self.root.parent, log):
            self._swap(pairs)

    def _swap(self, pairs: list[tuple[Path, Path]]) -> None:
        for staged, target in pairs:
            target.parent.mkdir(parents=True, exist_ok=True)
            backup = _backup_path(target) if os.path.lexists(target) else None
            self.moves.append(Move(str(staged), str(target), None if backup is None else str(backup)))
        with signals_deferred():
            exit_if_stop_requested()
            self._record(committed=False)
            try:
                for move in self.moves:
                    if move.backup is not None:
                        _set_aside(Path(move.target), Path(move.backup))
                    replace_durably(Path(move.staged), Path(move.target))
                self._record(committed=True)
                self.placed = True
            except BaseException:
                self.stuck = _roll_back(self.moves)
                raise
            _finish(self.moves)

    def failure_note(self) -> str:
        """What a failed or stopped run says about the outputs: the new ones, once swapped in (a stop held back
        during the swap acts after it), else those that were there before it."""
        if self.placed:
            return PLACED
        if self.stuck:
            return f"; previous outputs could not all be restored, they wait in {', '.join(self.stuck)}"
        return KEPT if self.had_previous else ""

    def remove(self) -> None:
        """Remove what this run staged, and the folders it created that stayed empty."""
        for staged in self.beside:
            _remove_if_there(staged)
        remove_path(self.root)
        for folder in sorted(self.created, key=lambda path: len(path.parts), reverse=True):
            try:
                folder.rmdir()
            except OSError:
                pass  # not empty, or gone
