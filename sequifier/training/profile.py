"""The whole-process profile of `sequifier train --profile`: where the wall time and the memory of a run go.

One recorder per process (PROFILE) collects, always and cheaply (a few perf_counter calls per step):
- phases of the run, as exclusive time (a phase nested in another counts only for itself), with the RSS
  at the last end of each phase when the profile is on;
- the parts of each training step: waiting for the next batch, forward+loss and backward per microbatch,
  the optimizer per optimizer step. On CUDA, and only with the profile on, each part ends with a
  synchronize, so that it holds the device work it launched.
`--profile` turns reporting on for this process and, through SEQUIFIER_PROFILE, for the ranks it spawns.
"""

from __future__ import annotations

import functools
import os
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

if TYPE_CHECKING:
    import torch

ENVIRONMENT = "SEQUIFIER_PROFILE"
PHASES = (
    "start-up",
    "config",
    "data loading",
    "model build",
    "training steps",
    "validation",
    "checkpointing",
    "records",
    "export",
)
OTHER = "other"
GATHERING, FORWARD, BACKWARD, OPTIMIZER = "data gathering", "forward+loss", "backward", "optimizer"
STEP_PARTS = (GATHERING, FORWARD, BACKWARD, OPTIMIZER)
Result = TypeVar("Result")


def seconds_since_process_start() -> float | None:
    """How long ago the kernel started this process (Linux /proc, 10 ms resolution); None where unknown."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started_ticks = int(stat.read().rpartition(")")[2].split()[19])
            return float(uptime.read().split()[0]) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def resident_mib() -> float | None:
    """The resident set size of this process now (/proc/self/statm), in MiB; None where unknown."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


class PhaseRecorder:
    """Exclusive seconds per phase, RSS at each phase's end, and the seconds and counts of the step parts."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.enabled = os.environ.get(ENVIRONMENT) == "1"
        self.reset()

    def reset(self) -> None:
        """Forget everything recorded; the command of this process starts now."""
        self.command_started = self.clock()
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.rss_at_end: dict[str, float | None] = {}
        self.step_seconds = dict.fromkeys(STEP_PARTS, 0.0)
        self.step_counts = dict.fromkeys(STEP_PARTS, 0)
        self.synchronized = False
        self._nested: list[float] = []  # per open phase: the seconds of the phases nested in it so far

    def begin_command(self, enabled: bool) -> None:
        """The command starts: what ran before is start-up. `enabled` turns reporting on (here and in spawned ranks)."""
        self.reset()
        self.enabled = enabled
        if enabled:
            os.environ[ENVIRONMENT] = "1"
            self.rss_at_end["start-up"] = resident_mib()
        else:
            os.environ.pop(ENVIRONMENT, None)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = self.clock()
        self._nested.append(0.0)
        try:
            yield
        finally:
            elapsed = self.clock() - started
            self.seconds[name] += elapsed - self._nested.pop()
            if self._nested:
                self._nested[-1] += elapsed
            if self.enabled:
                self.rss_at_end[name] = resident_mib()

    def step(
        self, part: str, device: torch.device, work: Callable[..., Result], *args: Any, counted: bool = True
    ) -> Result:
        """`work(*args)` timed as step part `part` (synchronized on CUDA when the profile is on).

        Uncounted calls add their time to the part's last counted one (a microbatch's later passes).
        """
        started = self.clock()
        result = work(*args)
        if self.enabled and device.type == "cuda":
            import torch

            torch.cuda.synchronize(device)
            self.synchronized = True
        self.step_seconds[part] += self.clock() - started
        self.step_counts[part] += counted
        return result

    def gathered(self, batches: Iterator[Result]) -> Iterator[Result]:
        """`batches`, with the wait for each next one timed as data gathering."""
        while True:
            started = self.clock()
            batch = next(batches, None)
            self.step_seconds[GATHERING] += self.clock() - started
            if batch is None:
                return
            self.step_counts[GATHERING] += 1
            yield batch


PROFILE = PhaseRecorder()


def timed(name: str) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Decorator: every call of the function counts as phase `name` of PROFILE."""

    def decorate(function: Callable[..., Result]) -> Callable[..., Result]:
        @functools.wraps(function)
        def in_phase(*args: Any, **kwargs: Any) -> Result:
            with PROFILE.phase(name):
                return function(*args, **kwargs)

        return in_phase

    return decorate
