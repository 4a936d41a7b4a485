"""When a run writes checkpoints, from the guide's interval fields.

- `save_interval_epochs: N`: a persistent epoch snapshot every N epochs (and `latest`);
- `save_interval_batches: N`: a persistent batch snapshot every N batches (microbatches) of the run;
- `save_interval_minutes: M`: a persistent batch snapshot when M minutes have passed since the last one;
- `save_latest_interval_minutes: M`: only `latest` refreshed every M minutes.
Minutes are read from an injectable clock (tests control it).
"""

from __future__ import annotations

import time
from typing import Callable

from sequifier.config.schema import GlobalTrainingConfig

PERSISTENT, LATEST_ONLY = "persistent", "latest"


class SnapshotSchedule:
    def __init__(self, training: GlobalTrainingConfig, clock: Callable[[], float] = time.monotonic):
        self.training = training
        self.clock = clock
        now = clock()
        self.last_persistent = self.last_latest = now

    def after_batch(self, global_batch: int) -> str | None:
        """PERSISTENT, LATEST_ONLY or None for the batch just trained (the run's `global_batch`-th)."""
        training, now = self.training, self.clock()
        batches = training.save_interval_batches
        minutes = training.save_interval_minutes
        due = bool(batches and global_batch % batches == 0)
        due = due or bool(minutes and now - self.last_persistent >= 60 * minutes)
        if due:
            self.last_persistent = self.last_latest = now
            return PERSISTENT
        latest = training.save_latest_interval_minutes
        if latest and now - self.last_latest >= 60 * latest:
            self.last_latest = now
            return LATEST_ONLY
        return None

    def after_epoch(self, global_epoch: int) -> bool:
        interval = self.training.save_interval_epochs
        if interval and global_epoch % interval == 0:
            self.last_persistent = self.last_latest = self.clock()
            return True
        return False
