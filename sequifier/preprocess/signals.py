"""Ctrl-C, SIGTERM and SIGHUP during preprocess: each ends the run with exit code 128 + signal (no traceback) after
the staged outputs are removed; steps that must not be cut hold them back (sequifier/deferred_signals.py).
Workers ignore both: the parent stops them.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

from sequifier.deferred_signals import stopping_signals

_requested: list[int] = []  # the stop signals signals_as_exit took, also those whose SystemExit Python then ignored


@contextmanager
def signals_as_exit() -> Iterator[None]:
    """While active, the stopping signals raise SystemExit(128 + signal) in the main thread.

    Where Python ignores that exception (a signal handled while a generator is finalized, or in a fork callback),
    `exit_if_stop_requested` raises it again at the next step that must not start after a stop.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _requested.clear()

    def _exit(signum, frame):
        _requested.append(signum)
        raise SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, _exit) for signum in stopping_signals()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def exit_if_stop_requested() -> None:
    """SystemExit(128 + signal) if a stop signal arrived while signals_as_exit was active."""
    if _requested:
        raise SystemExit(128 + _requested[0])


def ignore_in_worker() -> None:
    for signum in stopping_signals():
        signal.signal(signum, signal.SIG_IGN)
