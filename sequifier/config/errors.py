"""User-facing errors: one line naming where the problem is, exit code 2."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path
from typing import Iterable

from sequifier.config.entries import link_to_nothing


class UserError(Exception):
    """A problem the user can fix in a config file, a data file or a flag.

    `where` is a config path (`global_training.batch_size`), a file path or a
    column name; `problem` says what is wrong and what is allowed.
    """

    exit_code = 2

    def __init__(self, where: str, problem: str):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):
        return type(self), (self.where, self.problem)


class OutsideFailure(UserError):
    """A failure that no input caused, such as a process killed from outside (the OOM killer, `kill -9`): shown
    as one line like a UserError, with exit code 1, and not counted as the user's mistake in a sweep's summary."""

    exit_code = 1


def error_lines(error: UserError) -> str:
    """What the user sees: `error: <where>: <problem>`, one line per problem of a report of several."""
    return "\n".join(f"error: {problem}" for problem in getattr(error, "problems", [error]))


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """A ' (did you mean X?)' suffix when a close candidate exists, else ''."""
    candidates = list(candidates)
    same_letters = [c for c in candidates if c.lower() == name.lower()]
    matches = same_letters or difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""


def absent_file(path: Path) -> str:
    """Why a file a config or flag names is not there to read: a folder in its place, or nothing (naming the
    first folder on its way that is missing too, such as a misspelt project_root)."""
    path = Path(path)
    if link := link_to_nothing(path):
        return f"is {link}"
    if path.is_dir():
        return "is a folder, not a file"
    if special := special_file(path):
        return f"is {special}, not a regular file"
    return "does not exist" + missing_folder(path)


def special_file(path: Path) -> str | None:
    """What `path` is where it is neither a regular file nor a folder but exists (a named pipe, a socket, a
    device); None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"))
    kinds += ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), None)


def missing_folder(path: Path) -> str:
    """'; there is no folder F' for the first folder on `path`'s way that does not exist (a misspelt project_root,
    say), or '' where its folder is there."""
    missing = [parent for parent in Path(path).parents if not os.path.lexists(parent)]
    return f"; there is no folder {missing[-1]}" if missing else ""


def os_problem(error: OSError) -> str:
    """What the system said went wrong (`No space left on device`), for a UserError's problem."""
    return error.strerror or " ".join(str(error).split())[:200]


def file_system_error(error: OSError, consequence: str = "") -> UserError:
    """A file system's refusal (a full or read-only disk, a folder in the way) as a UserError naming the file."""
    where = error.filename2 or error.filename
    problem = os_problem(error) + (f"; {consequence}" if consequence else "")
    return UserError(str(where) if where else "file system", problem)
