"""Ending the `sequifier` process without the interpreter's teardown, once all that teardown would do for us is done.

With torch loaded, a normal exit spends about a second freeing every module and running the C++ libraries'
static destructors; nothing of that reaches a file. Before leaving, threading's exit hooks run and non-daemon
threads are joined, then the atexit handlers run (logging flushes its handlers there) and stdout and stderr
are flushed, as a normal exit would. Ctrl-C (SIGINT), SIGTERM or SIGHUP that reaches the top (no part of the
command handles it: preprocess and training stop on their own) unwinds the command, so that its cleanup runs, and
ends the process with one line and code 130 / 143 / 129, as a shell reports them (also where a library that was
loading turned it into an ImportError); once the process is leaving, such a signal ends it at once with the code it
leaves with; a MemoryError that reaches the
top is one line and code 1; any other exception that escapes the command still takes the normal way out, with its
traceback.
"""

from __future__ import annotations

import atexit
import os
import resource
import signal
import sys
import threading
from typing import Callable, NoReturn

from sequifier.deferred_signals import stopping_signals

INTERRUPTED = 128 + signal.SIGINT  # the status a shell gives a process that SIGINT ended


class Terminated(BaseException):
    """SIGTERM (or SIGHUP) arrived while the command had no handler of its own for it."""

    def __init__(self, number: int = signal.SIGTERM) -> None:
        super().__init__(number)
        self.number = number


def _raise_terminated(number: int, frame: object) -> None:
    raise Terminated(number)


def run_and_leave(main: Callable[[], int | None]) -> NoReturn:
    for number in stopping_signals():
        if signal.getsignal(number) is signal.SIG_DFL:  # Python's own handler already turns SIGINT into Ctrl-C
            signal.signal(number, _raise_terminated)
    try:
        try:
            status = main()
        except ImportError as failed:
            stop = _stop_behind(failed)
            if stop is None:
                raise
            raise stop from None
    except SystemExit as stop:
        status = stop.code
    except KeyboardInterrupt:
        print("stopped by Ctrl-C (SIGINT)", file=sys.stderr)
        status = INTERRUPTED
    except Terminated as ended:
        print(f"stopped by {signal.Signals(ended.number).name}", file=sys.stderr)
        status = 128 + ended.number
    except MemoryError:
        print(f"error: out of memory: an allocation failed{_memory_limit()}", file=sys.stderr)
        status = 1
    leave(status)


def _stop_behind(error: BaseException) -> BaseException | None:
    """The stop signal's exception that a C extension turned into `error` while it loaded (onnxruntime's
    "initialization failed"), if one is in its chain of causes."""
    return found_behind(error, lambda link: isinstance(link, (KeyboardInterrupt, Terminated)))


def found_behind(error: BaseException, wanted: Callable[[BaseException], bool]) -> BaseException | None:
    """The first exception of `error`'s chain (itself, then what it was raised from or while handling) that is
    `wanted`."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        if wanted(link):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None


def _memory_limit() -> str:
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return " (the machine's memory is used up)"
    return f" under this process's address-space limit of {limit / 2**30:.2f} GiB (`ulimit -v`); raise or lift it"


def leave(status: object) -> NoReturn:
    """Exit as `sys.exit(status)` would: None is 0, an int is the code, anything else is printed and gives 1."""
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        print(status, file=sys.stderr)
        code = 1
    _stops_end_at_once(code)
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


def _stops_end_at_once(code: int) -> None:
    """From here on a stop signal (torchrun's SIGTERM to a rank that is leaving, a second Ctrl-C after a graceful
    stop) ends the process at once with the code it is leaving with: what the command did is done and said, and
    raising inside an exit hook would print Python's traceback."""
    if threading.current_thread() is not threading.main_thread():
        return

    def end_at_once(number: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, RuntimeError):  # RuntimeError: the signal came inside this stream's flush
                pass
        os._exit(code)

    for number in stopping_signals():
        if signal.getsignal(number) in (_raise_terminated, signal.default_int_handler):
            signal.signal(number, end_at_once)
