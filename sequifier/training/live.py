"""What a training run shows while an epoch runs (samples, rate, ETA, running loss) and its throughput over the run."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sequifier.progress import Progress
from sequifier.training.evaluation import Totals
from sequifier.training.losses import TargetLosses
from sequifier.training.progress import RunProgress


@dataclass
class Throughput:
    """Samples trained and seconds spent training in this process (a resumed run counts from its restart)."""

    samples: int = 0
    seconds: float = 0.0

    @property
    def samples_per_second(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else float("nan")


class EpochProgress:
    """The progress display of the running epoch: position in planned batches, rate in samples."""

    def __init__(
        self,
        label: str,
        planned_batches: int,
        progress: RunProgress,
        losses: dict[str, TargetLosses],
        processes: int = 1,
        enabled: bool = True,
    ):
        """`processes` ranks train in step (samples are counted for all of them); `enabled` only on rank 0."""
        self.run_progress = progress
        self.losses = losses
        self.processes = processes
        self.samples_at_start = self.shown_samples = progress.epoch_samples
        self.started = time.perf_counter()
        self.display = Progress(
            label, planned_batches, unit="samples", initial_position=progress.batches_done, enabled=enabled
        )

    def after_batch(self) -> None:
        p = self.run_progress
        self.display.advance(
            (p.epoch_samples - self.shown_samples) * self.processes, p.batches_done, self._running_loss
        )
        self.shown_samples = p.epoch_samples

    def _running_loss(self) -> str:
        values = []
        for dataset, target_losses in self.losses.items():
            combined = Totals()
            for (d, _), totals in self.run_progress.epoch_totals.items():
                if d == dataset:
                    combined.add(totals)
            if combined.count:
                means = {t: combined.loss[t] / max(combined.count[t], 1) for t in combined.loss}
                values.append(f"{dataset} {float(target_losses.aggregate(means)):.4f}")
        return "loss " + ", ".join(values) if values else "loss -"

    def close(self, throughput: Throughput) -> float:
        """Close the display and add this epoch's samples and seconds to `throughput`; returns its samples/s."""
        self.display.close()
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        samples = (self.run_progress.epoch_samples - self.samples_at_start) * self.processes
        throughput.samples += samples
        throughput.seconds += elapsed
        return samples / elapsed
