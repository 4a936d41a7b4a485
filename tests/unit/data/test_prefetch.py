"""Prefetching gathers every item once, in order, whatever the number of worker threads."""

from __future__ import annotations

import threading
import time

import pytest

from sequifier.data.prefetch import BATCHES_AHEAD_PER_WORKER, gathering_workers, prefetched


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_results_come_back_in_item_order(workers: int):
    def slow_square(item: int) -> int:
        time.sleep(0.001 * (item % 3))  # later items sometimes finish first
        return item * item

    assert list(prefetched(range(40), slow_square, workers)) == [i * i for i in range(40)]


def test_workers_gather_ahead_of_the_consumer_but_not_without_bound():
    gathered: list[int] = []
    lock = threading.Lock()

    def record(item: int) -> int:
        with lock:
            gathered.append(item)
        return item

    batches = prefetched(range(100), record, workers=2)
    assert next(batches) == 0
    deadline = time.monotonic() + 5
    while len(gathered) < 1 + BATCHES_AHEAD_PER_WORKER * 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert 1 < len(gathered) <= 2 + BATCHES_AHEAD_PER_WORKER * 2
    batches.close()


def test_without_workers_nothing_is_gathered_before_it_is_asked_for():
    gathered: list[int] = []
    batches = prefetched(range(10), lambda item: gathered.append(item) or item, workers=0)
    assert next(batches) == 0 and gathered == [0]


def test_an_error_while_gathering_reaches_the_consumer_at_its_item():
    def failing(item: int) -> int:
        if item == 5:
            raise ValueError("bad item")
        return item

    batches = prefetched(range(10), failing, workers=2)
    assert [next(batches) for _ in range(5)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="bad item"):
        next(batches)


def test_closing_early_leaves_no_worker_thread_running():
    before = threading.active_count()
    batches = prefetched(range(1000), lambda item: item, workers=3)
    next(batches)
    batches.close()
    assert threading.active_count() == before


@pytest.mark.parametrize(
    "configured, device_type, expected",
    [(None, "cpu", 0), (None, "cuda", 1), (None, "mps", 1), (0, "cuda", 0), (3, "cpu", 3), (2, "cuda", 2)],
)
def test_unset_workers_gather_ahead_only_for_an_accelerator(configured, device_type, expected):
    assert gathering_workers(configured, device_type) == expected
