"""Steps that must not be cut by Ctrl-C or SIGTERM (swapping outputs in, stopping workers): the signal waits
until the step is done and then acts as it would have."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """While active, SIGINT and SIGTERM are held back; the first one that arrived is raised again at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: arrived.append(signum)) for signum in STOPPING}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if arrived:
            signal.raise_signal(arrived[0])
