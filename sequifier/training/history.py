"""A run's losses per epoch, read back from the metric CSVs of one logs/<model>/ folder.

The files may hold several runs of the same model name one after another; only the latest run
(the run_id of the last row) is read. A resumed run keeps its run_id, and its files were cut back
to its checkpoint, so its history is the uninterrupted run's.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sequifier.config.errors import UserError
from sequifier.training.metrics import FILES

SPLITS = dict(zip(("training", "validation"), FILES))
READ_FIELDS = ("run_id", "phase", "dataset", "part", "epoch", "target", "metric", "value")


@dataclass
class History:
    """Values by (split, series, metric) and epoch; `series` is the target, prefixed by its part when parts differ."""

    dataset: str = ""
    values: dict[tuple[str, str, str], dict[int, float]] = field(default_factory=dict)
    phases: dict[int, str] = field(default_factory=dict)

    def series(self, split: str, metric: str = "loss") -> dict[str, dict[int, float]]:
        return {name: by_epoch for (s, name, m), by_epoch in self.values.items() if s == split and m == metric}

    def names(self) -> list[str]:
        """Every series name, `aggregate` first."""
        found = sorted({name for (_, name, _) in self.values})
        return sorted(found, key=lambda name: not name.endswith("aggregate"))

    def phase_starts(self) -> list[tuple[int, str]]:
        """(first epoch, name) of every phase after the first."""
        epochs = sorted(self.phases)
        return [(e, self.phases[e]) for before, e in zip(epochs, epochs[1:]) if self.phases[e] != self.phases[before]]


def has_rows(folder: Path) -> bool:
    """Whether the metric files in `folder` hold a row."""
    return any(_rows(Path(folder) / name, quiet=True) for name in SPLITS.values())


def read_history(folder: Path) -> History:
    """The latest run's history in `folder`; a UserError when the folder holds no metric files."""
    if not Path(folder).is_dir():
        what = "is not a folder" if Path(folder).exists() else "does not exist"
        raise UserError(str(folder), f"{what}; pass a logs/<model> folder")
    paths = {split: Path(folder) / name for split, name in SPLITS.items()}
    if not any(path.is_file() for path in paths.values()):
        raise UserError(str(folder), f"holds no metric files ({', '.join(FILES)}); pass a logs/<model> folder")
    rows = {split: _rows(path) for split, path in paths.items()}
    if not any(rows.values()):
        raise UserError(str(folder), "its metric files hold no rows yet: a run writes them after its first epoch")
    latest = next((r[-1]["run_id"] for r in (rows["validation"], rows["training"]) if r), None)
    history = History()
    for split, split_rows in rows.items():
        mine = [row for row in split_rows if row["run_id"] == latest]
        several_parts = len({row["part"] for row in mine if row["target"] != "aggregate"}) > 1
        for row in mine:
            try:
                if None in row or None in row.values():
                    raise ValueError("more or fewer fields than the header")
                epoch, value = int(row["epoch"]), float(row["value"])
            except (TypeError, ValueError):
                raise UserError(
                    str(paths[split]),
                    f"holds a row that is not a metric row: {row}; remove or repair it (an edit or a crash cut it)",
                ) from None
            name = f"{row['part']}/{row['target']}" if several_parts and row["part"] else row["target"]
            history.values.setdefault((split, name, row["metric"]), {})[epoch] = value
            history.phases[epoch] = row["phase"]
            history.dataset = row["dataset"]
    return history


def _rows(path: Path, quiet: bool = False) -> list[dict[str, str]]:
    """The file's rows, without a last row that a crash or an edit cut (noted unless `quiet`)."""
    if not path.is_file():
        return []
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [name for name in READ_FIELDS if name not in (reader.fieldnames or READ_FIELDS)]
            if missing:
                raise UserError(str(path), f"lacks the metric columns {', '.join(missing)}; it is not a metric file")
            rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as error:
        raise UserError(str(path), f"is not a readable metric file ({error})") from None
    if rows and not _ends_a_line(path):
        if not quiet:
            print(f"note: {path} ends in a partial row (an edit or a crash cut it); it is left out", file=sys.stderr)
        rows.pop()
    return rows


def _ends_a_line(path: Path) -> bool:
    with path.open("rb") as raw:
        raw.seek(-1, 2)
        return raw.read(1) == b"\n"
