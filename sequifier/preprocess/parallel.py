"""Running tasks in this process (n_cores 1) or in forked worker processes, results in task order."""

from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any, Callable, Iterator, Sequence

from sequifier.config.errors import UserError

_shared: Any = None


def _set_shared(shared: Any) -> None:
    global _shared
    _shared = shared


def _call(fn: Callable[[Any, Any], Any], task: Any) -> tuple:
    """Runs in a worker; UserError travels back as its parts, other errors as themselves or as text.

    (An exception that does not survive pickling would otherwise break the pool without a message.)
    """
    try:
        return True, fn(_shared, task)
    except UserError as error:
        return False, (error.where, error.problem)
    except Exception as error:
        try:
            pickle.loads(pickle.dumps(error))
        except Exception:
            raise RuntimeError(f"{type(error).__name__}: {error}") from None
        raise


def _context() -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")


def run_tasks(fn: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any], n_cores: int) -> Iterator[Any]:
    """fn(shared, task) for every task, yielded in task order; `shared` reaches each worker once."""
    if n_cores <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield fn(shared, task)
        return
    executor = ProcessPoolExecutor(
        max_workers=min(n_cores, len(tasks)), mp_context=_context(), initializer=_set_shared, initargs=(shared,)
    )
    try:
        for ok, value in executor.map(partial(_call, fn), tasks):
            if not ok:
                raise UserError(*value)
            yield value
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
