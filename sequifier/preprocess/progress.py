"""Throttled progress lines on stderr: rows processed, rows/s and ETA of one preprocessing phase."""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

REPORT_EVERY_S = 2.0


def log(message: str, stream: Optional[TextIO] = None) -> None:
    print(f"[preprocess] {message}", file=stream or sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"


class Progress:
    """Counts rows of one phase; prints at most once every `every` seconds.

    The ETA extrapolates from `units` (rows, or bytes for CSV input) against `total_units`;
    without a total only rows and rows/s are shown.
    """

    def __init__(
        self,
        phase: str,
        total_units: Optional[int],
        every: float = REPORT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        stream: Optional[TextIO] = None,
    ):
        self.phase = phase
        self.total_units = total_units
        self.every = every
        self.clock = clock
        self.stream = stream
        self.started = clock()
        self.last_report = self.started
        self.rows = 0
        self.units = 0

    def advance(self, rows: int, units: Optional[int] = None) -> None:
        """Add `rows` processed; `units` is the new absolute unit count (default: rows so far)."""
        self.rows += rows
        self.units = self.rows if units is None else units
        now = self.clock()
        if now - self.last_report >= self.every:
            self.last_report = now
            log(self.line(now), self.stream)

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        text = f"{self.phase}: {self.rows:,} rows, {self.rows / elapsed:,.0f} rows/s"
        if self.total_units:
            share = min(self.units / self.total_units, 1.0)
            text += f", {100 * share:.0f}%"
            if share > 0:
                text += f", ETA {_duration(elapsed * (1 - share) / share)}"
        return text
