"""Running tasks in this process (n_cores 1) or in forked worker processes, results in task order.

Workers end with their parent, even when it is killed with SIGKILL: on Linux through the parent-death
signal, elsewhere through a thread that watches the parent.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence

from sequifier.config.errors import UserError
from sequifier.deferred_signals import signals_deferred
from sequifier.preprocess.signals import ignore_in_worker

PR_SET_PDEATHSIG = 1
WATCH_EVERY_S = 0.5
_shared: Any = None


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_EVERY_S)
    os._exit(1)


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent ended before the signal was armed
        os._exit(1)


def _start_worker(shared: Any, parent: int) -> None:
    global _shared
    ignore_in_worker()
    _die_with_parent(parent)
    _shared = shared


def _call(fn: Callable[[Any, Any], Any], task: Any) -> tuple:
    """Runs in a worker; a UserError travels back as itself where it pickles, else as a plain one of its parts;
    other errors as themselves or as text.

    (An exception that does not survive pickling would otherwise break the pool without a message.)
    """
    try:
        return True, fn(_shared, task)
    except UserError as error:
        return False, error if _survives_pickling(error) else UserError(error.where, error.problem)
    except Exception as error:
        if not _survives_pickling(error):
            raise RuntimeError(f"{type(error).__name__}: {error}") from None
        raise


def _survives_pickling(error: Exception) -> bool:
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return False
    return True


def _context() -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system tells it, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_tasks(fn: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any], n_cores: int) -> Iterator[Any]:
    """fn(shared, task) for every task, yielded in task order; `shared` reaches each worker once."""
    if n_cores <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield fn(shared, task)
        return
    executor = ProcessPoolExecutor(
        max_workers=min(n_cores, len(tasks)),
        mp_context=_context(),
        initializer=_start_worker,
        initargs=(shared, os.getpid()),
    )
    finished = False
    try:
        futures = [executor.submit(_call, fn, task) for task in tasks]  # not map: it cancels futures on failure
        for future in futures:
            ok, value = future.result()
            if not ok:
                raise value
            yield value
        finished = True
    except BrokenProcessPool:
        raise UserError(
            "n_cores", "a worker process ended abruptly (killed, or out of memory); try fewer n_cores"
        ) from None
    finally:
        with signals_deferred():  # a shutdown cut short leaves workers waiting for tasks that never come
            if not finished:
                _stop_workers(executor)
            executor.shutdown(wait=True)


def _stop_workers(executor: ProcessPoolExecutor) -> None:
    """Kill the workers at once instead of letting them finish their tasks (the run has failed)."""
    for process in list((executor._processes or {}).values()):  # no public way before Python 3.14
        process.kill()
