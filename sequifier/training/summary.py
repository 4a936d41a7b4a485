"""The run summary printed at the end of every training run: losses per dataset and target, time, outputs."""

from __future__ import annotations

import math
from pathlib import Path

from sequifier.progress import duration
from sequifier.training.curves import CURVES_FILE
from sequifier.training.history import has_rows, read_history
from sequifier.training.result import TrainResult

HEADER = ("dataset", "target", "best val loss", "best epoch", "final val loss", "baseline")


def summary_rows(folder: Path) -> list[tuple[str, ...]]:
    """Per target of the run logged in `folder`: best and final validation loss, baseline, epoch of the best; none
    for a dataset the run neither trained nor evaluated (its files hold no rows)."""
    if not has_rows(folder):
        return []
    history = read_history(folder)
    baselines = history.series("validation", "baseline_loss")
    rows = []
    for name, by_epoch in history.series("validation").items():
        best_epoch = min(by_epoch, key=lambda e: (by_epoch[e], e))
        final_epoch = max(by_epoch)
        baseline = baselines.get(name, {}).get(final_epoch, math.nan)
        rows.append(
            (
                history.dataset,
                name,
                f"{by_epoch[best_epoch]:.4f}",
                str(best_epoch),
                f"{by_epoch[final_epoch]:.4f}",
                f"{baseline:.4f}",
            )
        )
    return sorted(rows, key=lambda row: (row[0], not row[1].endswith("aggregate"), row[1]))


def run_summary(result: TrainResult, wall_seconds: float) -> str:
    """The summary table of one finished run, ready to print."""
    rows = [row for folder in result.log_folders for row in summary_rows(Path(folder))]
    widths = [max(len(str(cell)) for cell in column) for column in zip(HEADER, *rows)]
    lines = [f"\nrun summary: {result.model_name}"]
    for row in [HEADER, *rows]:
        lines.append("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if not rows and result.evaluated:
        folders = ", ".join(result.log_folders)
        lines.append(
            f"  (the metric files in {folders} hold no validation rows: removed or emptied since the run wrote them)"
        )
    elif not rows:
        lines.append("  (no validation: add an `evaluation` section to see validation losses)")
    if result.best_epoch:
        lines.append(f"  best model: epoch {result.best_epoch} (monitored loss {result.monitored_loss:.4f})")
    throughput = result.samples_per_second
    trained = f"throughput {throughput:,.0f} samples/s" if math.isfinite(throughput) else "no step left to train"
    lines.append(f"  wall time {duration(wall_seconds)}, {trained}")
    lines += [f"  model    {path}" for path in result.exported]
    pictures = [Path(folder) / CURVES_FILE for folder in result.log_folders]
    lines += [f"  curves   {path}" for path in pictures if path.is_file()]
    return "\n".join(lines)
