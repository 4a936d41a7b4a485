"""Ending the `sequifier` process without the interpreter's teardown, once all that teardown would do for us is done.

With torch loaded, a normal exit spends about a second freeing every module and running the C++ libraries'
static destructors; nothing of that reaches a file. Before leaving, threading's exit hooks run and non-daemon
threads are joined, then the atexit handlers run (logging flushes its handlers there) and stdout and stderr
are flushed, as a normal exit would. Ctrl-C (SIGINT) or SIGTERM that reaches the top (no part of the command
handles it: preprocess and training stop on their own) unwinds the command, so that its cleanup runs, and ends
the process with one line and code 130 / 143, as a shell reports them; any other exception that escapes the
command still takes the normal way out, with its traceback.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import Callable, NoReturn

INTERRUPTED = 128 + signal.SIGINT  # the statuses a shell gives a process that SIGINT / SIGTERM ended
TERMINATED = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived while the command had no handler of its own for it."""


def _raise_terminated(number: int, frame: object) -> None:
    raise Terminated


def run_and_leave(main: Callable[[], int | None]) -> NoReturn:
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        status = main()
    except SystemExit as stop:
        status = stop.code
    except KeyboardInterrupt:
        print("stopped by Ctrl-C (SIGINT)", file=sys.stderr)
        status = INTERRUPTED
    except Terminated:
        print("stopped by SIGTERM", file=sys.stderr)
        status = TERMINATED
    leave(status)


def leave(status: object) -> NoReturn:
    """Exit as `sys.exit(status)` would: None is 0, an int is the code, anything else is printed and gives 1."""
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        print(status, file=sys.stderr)
        code = 1
    # The interpreter's own first step of an exit: threading's exit hooks (which tell idle thread pools, such as
    # torch.compile's, to end) and then the join of every non-daemon thread; joining without the hooks waits forever.
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # the code Python gives when it cannot flush stdout at exit
    os._exit(code)
