"""TensorBoard event files holding the same values as a run's metric CSVs (global_training.tensorboard).

Events go to logs/<model>/tensorboard/<run_id>/, one scalar per CSV row: tag `<split>/<part>/<target>/<metric>`
(`<split>/<target>/<metric>` for dataset aggregates), step `global_step`. Opening replays the rows
the CSVs already hold for the run into fresh event files, so a resumed run (whose CSVs were cut back
to its checkpoint) ends with exactly the values of its CSVs.
"""

from __future__ import annotations

import csv
from pathlib import Path

from sequifier.atomic import remove_path
from sequifier.config.errors import UserError
from sequifier.training.metrics import MetricsFile

FIELD = "global_training.tensorboard"
FOLDER = "tensorboard"


def _summary_writer(log_dir: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        raise UserError(
            FIELD,
            f"is true, but TensorBoard cannot be loaded ({error}); install it: pip install 'sequifier[tensorboard]'",
        ) from None
    return SummaryWriter(log_dir=str(log_dir))


def tag(split: str, row: dict) -> str:
    return "/".join(str(x) for x in (split, row["part"], row["target"], row["metric"]) if x)


class TensorBoardRun:
    """The event writer of one logs/<model>/ folder, shared by its training and validation files."""

    def __init__(self, folder: Path, run_id: str, csv_files: dict[str, Path]):
        log_dir = folder / FOLDER / run_id
        remove_path(log_dir)
        self.writer = _summary_writer(log_dir)
        for split, path in csv_files.items():
            with path.open(newline="") as handle:
                for row in csv.DictReader(handle):
                    if row["run_id"] == run_id:
                        self.add(split, row)

    def add(self, split: str, row: dict) -> None:
        self.writer.add_scalar(tag(split, row), float(row["value"]), int(row["global_step"]))

    def close(self) -> None:
        self.writer.close()


class MirroredMetricsFile:
    """A metric CSV whose every row is also written as a TensorBoard scalar."""

    def __init__(self, metrics_file: MetricsFile, split: str, events: TensorBoardRun):
        self.metrics_file, self.split, self.events = metrics_file, split, events
        self.path = metrics_file.path

    def write(self, **row: object) -> None:
        self.metrics_file.write(**row)
        self.events.add(self.split, row)

    def size(self) -> int:
        return self.metrics_file.size()

    def close(self) -> None:
        self.metrics_file.close()
        self.events.close()


def mirrored(files: tuple[MetricsFile, MetricsFile], run_id: str) -> tuple[MirroredMetricsFile, MirroredMetricsFile]:
    """The (training, validation) files of one folder, mirrored into its TensorBoard events."""
    training, validation = files
    events = TensorBoardRun(training.path.parent, run_id, {"training": training.path, "validation": validation.path})
    return MirroredMetricsFile(training, "training", events), MirroredMetricsFile(validation, "validation", events)
