"""Gathering training batches ahead of the loop that trains on them (global_training.num_workers).

Worker threads gather the next planned batches while the loop computes; torch's indexing runs
without Python's global lock, so they overlap with the model's work. Gathering a batch is a pure
function of its planned views, and batches come back in planned order, so the number of workers
changes speed, never what is trained.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

Item = TypeVar("Item")
Gathered = TypeVar("Gathered")
BATCHES_AHEAD_PER_WORKER = 2


def gathering_workers(configured: int | None, device_type: str) -> int:
    """The workers of global_training.num_workers; null: 1 where the step runs on an accelerator, whose host
    thread would otherwise gather each batch while the device waits, and 0 on the CPU, whose cores the step uses.
    """
    if configured is not None:
        return configured
    return 0 if device_type == "cpu" else 1


def prefetched(items: Iterable[Item], gather: Callable[[Item], Gathered], workers: int) -> Iterator[Gathered]:
    """`gather(item)` of every item, in order; with `workers` > 0, gathered up to 2 x workers items ahead."""
    if workers == 0:
        for item in items:
            yield gather(item)
        return
    pending: deque[Future[Gathered]] = deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sequifier-batches") as pool:
        try:
            for item in items:
                pending.append(pool.submit(gather, item))
                if len(pending) > BATCHES_AHEAD_PER_WORKER * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
