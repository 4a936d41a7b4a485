"""Where a run stands: phase, epoch and batch position, step counters and the running epoch's sums.

This is what a checkpoint records so that a resumed run continues at the very next planned batch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sequifier.training.evaluation import Totals


@dataclass
class RunProgress:
    phase_index: int = 0
    phase_epoch: int = 1  # 1-based epoch of the phase that runs now or next
    phase_started: bool = False  # the optimization lifecycle has begun phase_index
    completed_epochs: int = 0
    batches_done: int = 0  # planned batches of the running epoch already trained
    global_batch: int = 0  # microbatches since the run began
    global_step: int = 0  # optimizer updates since the run began
    epoch_learning_rate: float = 0.0
    epoch_samples: int = 0
    epoch_totals: dict[tuple[str, str], Totals] = field(default_factory=dict)

    @property
    def global_epoch(self) -> int:
        """The run-wide number of the epoch that runs now or next."""
        return self.completed_epochs + 1

    def begin_epoch(self, parts: list[tuple[str, str]], learning_rate: float) -> None:
        if self.batches_done == 0:
            self.epoch_totals = {key: Totals() for key in parts}
            self.epoch_learning_rate = learning_rate
            self.epoch_samples = 0

    def finish_epoch(self, phase_epochs: int) -> None:
        """Count the epoch done; move to the next epoch, or to the next phase after the phase's last one."""
        self.completed_epochs += 1
        self.batches_done = 0
        self.epoch_totals = {}
        if self.phase_epoch == phase_epochs:
            self.phase_index, self.phase_epoch, self.phase_started = self.phase_index + 1, 1, False
        else:
            self.phase_epoch += 1

    def to_plain(self) -> dict[str, Any]:
        plain = asdict(self)
        plain["epoch_totals"] = [[d, p, asdict(t)] for (d, p), t in self.epoch_totals.items()]
        return plain

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> RunProgress:
        values = dict(plain)
        values["epoch_totals"] = {(d, p): Totals(**t) for d, p, t in plain["epoch_totals"]}
        return cls(**values)
