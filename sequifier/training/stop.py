"""Graceful stop on SIGTERM or SIGUSR1 (what Slurm sends before a time limit or on preemption), on Ctrl-C, and on
SIGHUP (a closed terminal) unless the command was started with it ignored (`nohup`).

Inside a Submitit job the signals are Submitit's requeue signal and SIGUSR1 (distributed/submitit_task.py).

The first signal asks the run to stop: it finishes the current optimizer step (the open accumulation
window), writes the rolling latest checkpoint, says where it stopped and exits with STOPPED_EXIT_CODE,
so that resuming continues exactly; it says so when it arrives. Once training is complete, a request lets the
export finish instead, as nothing would be left to resume. A second signal stops at once (the default action,
which also ends a process blocked inside a call that Python's handlers would wait for). Outside Submitit,
FORWARDED (SIGUSR2) asks for the same stop but never stops at once: the parent of spawned ranks forwards its
signals with it, which a rank that got the signal itself (Ctrl-C reaches the whole process group) ignores.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from types import FrameType

from sequifier.distributed.submitit_task import in_submitit_job, stop_signals

STOPPED_EXIT_CODE = 75  # EX_TEMPFAIL: stopped on request, resume to continue
FORWARDED = signal.SIGUSR2


_ARRIVED_BEFORE_TRAINING: list[int] = []


def remember_stops_until_training(numbers: set[int]) -> None:
    """In a spawned rank until training handles them: a stop signal of `numbers` that arrives meanwhile is kept,
    and the GracefulStop that training enters acts on it then. One the process ignores (SIGHUP under nohup) stays
    ignored."""
    for number in numbers:
        if signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, lambda number, frame: _ARRIVED_BEFORE_TRAINING.append(number))


class StopRequested(Exception):
    """The run stopped after writing its latest checkpoint."""


class GracefulStop:
    """Installs the handlers for the duration of a run (main thread only; elsewhere it does nothing)."""

    def __init__(self, announce: bool = True) -> None:
        self.announce = announce  # one rank says what a stop request does
        self.requested: str | None = None
        self.training_done = False  # then a stop request lets the export finish: nothing would be left to resume
        self._previous: dict[int, object] = {}
        self._signals = stop_signals()
        self._forwarded = () if in_submitit_job() else (FORWARDED,)

    def __enter__(self) -> GracefulStop:
        try:
            self._previous = {number: signal.signal(number, self._handle) for number in self._signals + self._forwarded}
        except ValueError:  # not the main thread
            self._previous = {}
        arrived = [number for number in _ARRIVED_BEFORE_TRAINING if number in self._previous]
        _ARRIVED_BEFORE_TRAINING.clear()
        if arrived:
            self._handle(arrived[0], None)
        return self

    def _handle(self, number: int, frame: FrameType | None) -> None:
        forwarded = number in self._forwarded
        if forwarded and multiprocessing.parent_process() is not None:  # a spawned rank: its parent forwarded a stop
            self.requested = self.requested or "a signal to the process that started the ranks"
            return
        name = signal.Signals(number).name
        if self.requested is not None and forwarded:
            return
        self.requested = self.requested or name
        if not forwarded:
            for other in self._signals:
                signal.signal(other, signal.SIG_DFL)
        if self.announce:  # os.write: a print here could re-enter a progress line's print to stderr
            doing = (
                "training is complete; finishing the last validation and the export of its models"
                if self.training_done
                else "stopping after the current optimizer step, once the latest checkpoint is written"
            )
            with contextlib.suppress(OSError):  # a stderr nobody reads any more
                os.write(
                    sys.stderr.fileno(), f"\n{name}: {doing}; a second signal stops at once, without it\n".encode()
                )

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
