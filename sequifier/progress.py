"""Live progress of long work on stderr: a bar on an interactive terminal, else a plain line at a bounded rate.

Every command shows its long loops (training epochs, preprocessing passes, inference) through `Progress`.
`--quiet` turns all of it off for the process (`set_quiet`); `enabled=False` turns off one display
(a process other than rank 0 under distribution).
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

LINE_EVERY_S = 30.0  # plain lines (CI, Slurm logs): at most one per display this often
BAR_DETAIL_EVERY_S = 0.5  # the bar's counts and detail are recomputed at most this often
_settings = {"quiet": False}


def set_quiet(quiet: bool) -> None:
    """Silence (or restore) every progress display of this process."""
    _settings["quiet"] = quiet


def duration(seconds: float) -> str:
    """A short human duration: 42.0s, 3m07s, 2h05m."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"


class Progress:
    """Progress of one loop: `count` items done (the rate is counted in them) at `position` of `total`.

    The position defaults to the count; it differs where the ETA is better measured in other units
    (planned batches of an epoch while samples are counted, bytes of a CSV while rows are counted).
    `detail` is called only when the display refreshes, so it may cost more than an increment.
    """

    def __init__(
        self,
        label: str,
        total: Optional[int],
        unit: str = "rows",
        initial_position: int = 0,
        enabled: bool = True,
        stream: Optional[TextIO] = None,
        every: float = LINE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream or sys.stderr
        self.every, self.clock = every, clock
        self.active = enabled and not _settings["quiet"]
        self.count, self.position, self.initial_position = 0, initial_position, initial_position
        self.started = self.last_shown = clock()
        self.bar = self._open_bar() if self.active and self.stream.isatty() else None

    def _open_bar(self):
        from tqdm import tqdm

        shape = (
            "{desc}: {percentage:3.0f}%|{bar:24}| [{elapsed}<{remaining}{postfix}]"
            if self.total
            else "{desc}: [{elapsed}{postfix}]"
        )
        return tqdm(
            total=self.total,
            initial=self.initial_position,
            desc=self.label,
            bar_format=shape,
            file=self.stream,
            leave=False,
            dynamic_ncols=True,
            mininterval=BAR_DETAIL_EVERY_S,
        )

    def advance(self, count: int, position: Optional[int] = None, detail: Optional[Callable[[], str]] = None) -> None:
        """Add `count` items; `position` is the new absolute position (default: moves with the count)."""
        if not self.active:
            return
        self.count += count
        self.position = self.position + count if position is None else position
        now = self.clock()
        if self.bar is not None:
            self.bar.update(self.position - self.bar.n)
            if now - self.last_shown >= BAR_DETAIL_EVERY_S:
                self.last_shown = now
                self.bar.set_postfix_str(self._counts(now, detail))
        elif now - self.last_shown >= self.every:
            self.last_shown = now
            print(self.line(now, detail), file=self.stream, flush=True)

    def _counts(self, now: float, detail: Optional[Callable[[], str]]) -> str:
        rate = self.count / max(now - self.started, 1e-9)
        text = f"{self.count:,} {self.unit}, {rate:,.0f} {self.unit}/s"
        return f"{text}, {detail()}" if detail is not None else text

    def line(self, now: float, detail: Optional[Callable[[], str]] = None) -> str:
        """The plain progress line: label, counts, rate, share done, elapsed and ETA, detail."""
        elapsed = now - self.started
        text = f"{self.label}: {self._counts(now, detail)}, elapsed {duration(elapsed)}"
        moved = self.position - self.initial_position
        if self.total:
            text += f", {100 * min(self.position / self.total, 1.0):.0f}%"
            if moved > 0:
                text += f", ETA {duration(elapsed * max(self.total - self.position, 0) / moved)}"
        return text

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
