"""All-or-nothing outputs: everything is written into a hidden staging folder, then renamed into place (metadata last)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class Staging:
    """A hidden folder inside the output folder (same file system, so renames are atomic); removed at the end."""

    def __init__(self, output_folder: Path):
        self.created_output_folder = not output_folder.exists()
        output_folder.mkdir(parents=True, exist_ok=True)
        self.output_folder = output_folder
        self.root = output_folder / f".preprocess-{uuid.uuid4().hex[:12]}.tmp"
        self.root.mkdir()
        self.spill = self.root / "spill"
        self.parts = self.root / "parts"
        self.outputs = self.root / "outputs"
        self.outputs.mkdir()

    def place(self, moves: list[tuple[Path, Path]]) -> None:
        """Rename each staged path onto its target, in order; an existing target folder is replaced whole.

        If a rename fails after others succeeded, every target is removed so that no mix of
        old and new outputs remains.
        """
        placed = False
        try:
            for index, (staged, target) in enumerate(moves):
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_dir() and not target.is_symlink():
                    os.replace(target, self.root / f"replaced-{index}")
                os.replace(staged, target)
                placed = True
        except BaseException:
            if placed:
                for _, target in moves:
                    _remove(target)
            raise

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        if self.created_output_folder:
            try:
                self.output_folder.rmdir()
            except OSError:
                pass


@contextmanager
def terminate_as_exit() -> Iterator[None]:
    """While active, SIGTERM raises SystemExit in the main thread, so staged files get removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
