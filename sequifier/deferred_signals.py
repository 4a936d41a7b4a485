"""The signals that stop a command, and steps that must not be cut by them (swapping outputs in, stopping
workers): the signal waits until the step is done and then acts as it would have."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


def stopping_signals() -> tuple[signal.Signals, ...]:
    """Ctrl-C, SIGTERM and a closed terminal's SIGHUP, which acts as SIGTERM does, unless the command was started
    with SIGHUP ignored (`nohup`): it stays ignored."""
    hangup = () if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN else (signal.SIGHUP,)
    return (signal.SIGINT, signal.SIGTERM, *hangup)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """While active, the stopping signals are held back; the first one that arrived is raised again at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda signum, frame: arrived.append(signum)) for signum in stopping_signals()
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if arrived:
            signal.raise_signal(arrived[0])
