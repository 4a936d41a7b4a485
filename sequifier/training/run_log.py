"""The run's text log, logs/<model>/<model>.log: what the sequifier logger says from the run's start on.

The run's start-up (model build, data loading, scheduler checks, resume notes) logs before the log file can open,
so its records are held from `hold_start_up_records` until `attach_log_file`, which writes them first, after the
config's warnings (which the command prints before any job starts).
"""

from __future__ import annotations

import logging
from collections import deque
from pathlib import Path
from typing import Iterable

from sequifier.config.schema import TrainConfig
from sequifier.config.validate_training import config_warnings

HELD_RECORDS = 1000  # a start-up says far less; older records are dropped beyond this

logger = logging.getLogger("sequifier")


class _HeldRecords(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.records: deque[logging.LogRecord] = deque(maxlen=HELD_RECORDS)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


_held: _HeldRecords | None = None


def hold_start_up_records() -> None:
    """Keep the sequifier logger's records until the run's log file opens (dropping those of an earlier start
    in this process whose log never opened)."""
    global _held
    _release()
    _held = _HeldRecords()
    logger.addHandler(_held)
    logger.setLevel(logging.INFO)


def _release() -> Iterable[logging.LogRecord]:
    global _held
    if _held is None:
        return []
    logger.removeHandler(_held)
    records, _held = _held.records, None
    return records


def attach_log_file(logs_dir: Path, model_name: str, config: TrainConfig) -> logging.Handler:
    """Send the sequifier logger to logs/<model>/<model>.log as well (and to the console), starting with the
    config's warnings and the records held since the run started."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(logs_dir / f"{model_name}.log", mode="a")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    for warning in config_warnings(config):
        handler.handle(logger.makeRecord(logger.name, logging.WARNING, __file__, 0, warning, None, None))
    for record in _release():
        handler.handle(record)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    return handler
