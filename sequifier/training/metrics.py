"""Run logging: the text log, the training/validation metric CSVs and the class-share CSV in logs/<model>/."""

from __future__ import annotations

import csv
import logging
from pathlib import Path
from typing import Callable

FILES = ("training-metrics.csv", "validation-metrics.csv")  # per dataset, in logs/<model>/

METRIC_FIELDS = (
    "run_id",
    "phase",
    "dataset",
    "part",
    "epoch",
    "global_step",
    "target",
    "metric",
    "value",
    "learning_rate",
)
CLASS_SHARE_FIELDS = (
    *METRIC_FIELDS[: METRIC_FIELDS.index("target") + 1],
    "class_id",
    "class_label",
    "count",
    "total_count",
    "share",
    "learning_rate",
)

logger = logging.getLogger("sequifier")


class MetricsFile:
    """Appends metric rows (`fields`; long format, one value per row, by default) to a CSV file, flushing each row.

    Rows hold no timing, so a resumed run writes exactly the rows an uninterrupted one would.
    `keep_bytes` (resume) first cuts the file back to the length it had when the checkpoint was written.
    """

    def __init__(self, path: Path, run_id: str, keep_bytes: int | None = None, fields: tuple[str, ...] = METRIC_FIELDS):
        self.path = path
        self.run_id = run_id
        path.parent.mkdir(parents=True, exist_ok=True)
        if keep_bytes is not None and path.exists() and path.stat().st_size > keep_bytes:
            with path.open("r+b") as existing:
                existing.truncate(keep_bytes)
        elif keep_bytes is not None and (path.stat().st_size if path.exists() else 0) < keep_bytes:
            now = f"holds {path.stat().st_size} bytes" if path.exists() else "is missing"
            logger.warning(
                f"{path} {now}, and held {keep_bytes} bytes when the checkpoint was written: rows of the run are "
                "missing from it (the resumed run's rows follow what is left)"
            )
        _drop_partial_row(path)
        new = not path.exists() or path.stat().st_size == 0
        self._file = path.open("a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=fields)
        if new:
            self._written(self._writer.writeheader)

    def write(self, **row: object) -> None:
        self._written(lambda: self._writer.writerow({"run_id": self.run_id, **row}))

    def _written(self, write: Callable[[], object]) -> None:
        try:
            write()
            self._file.flush()
        except OSError as error:  # a file object's write names no file
            raise OSError(error.errno, error.strerror, str(self.path)) from None

    def size(self) -> int:
        """Bytes written so far (every row is flushed)."""
        return self._file.tell()

    def close(self) -> None:
        self._file.close()


def _drop_partial_row(path: Path) -> None:
    """Cut a file that does not end with a whole row (a crash or an edit cut it) back to its last whole row, so
    that the next row starts on a line of its own."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("r+b") as existing:
        end = existing.seek(0, 2)
        start = end
        while start > 0:
            start = max(0, start - (1 << 16))
            existing.seek(start)
            tail = existing.read(end - start)
            if tail.endswith(b"\n"):
                return
            if b"\n" in tail or start == 0:
                break
        whole = start + tail.rfind(b"\n") + 1
        existing.truncate(whole)
    logger.warning(f"{path} ended in a partial row ({tail[whole - start :][:80]!r}); it is removed")
