"""All-or-nothing outputs: everything is written to a hidden staging folder, then renamed into place (metadata last)."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sequifier.atomic import remove_path, remove_stale_temps, replace_durably, temp_path_for

# The staging folder is a temp of this name in the output folder; one left by a killed run is removed by the next.
STAGING_NAME = "preprocess"


class Staging:
    """A hidden folder inside the output folder (same file system, so renames are atomic); removed at the end."""

    def __init__(self, output_folder: Path):
        self.created_output_folder = not output_folder.exists()
        output_folder.mkdir(parents=True, exist_ok=True)
        self.output_folder = output_folder
        remove_stale_temps(output_folder / STAGING_NAME)
        self.root = temp_path_for(output_folder / STAGING_NAME)
        self.root.mkdir()
        self.spill = self.root / "spill"
        self.parts = self.root / "parts"
        self.outputs = self.root / "outputs"
        self.outputs.mkdir()

    def place(self, moves: list[tuple[Path, Path]]) -> None:
        """Rename each staged path onto its target durably, in order; an existing target folder is replaced whole.

        If a rename fails after others succeeded, every target is removed so that no mix of
        old and new outputs remains.
        """
        placed = False
        try:
            for index, (staged, target) in enumerate(moves):
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_dir() and not target.is_symlink():
                    os.replace(target, self.root / f"replaced-{index}")
                replace_durably(staged, target)
                placed = True
        except BaseException:
            if placed:
                for _, target in moves:
                    remove_path(target)
            raise

    def remove(self) -> None:
        remove_path(self.root)
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
