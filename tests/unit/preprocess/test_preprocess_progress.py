"""Progress lines: throttled to one per interval, with rows, rows/s and an ETA when the total is known."""

from __future__ import annotations

import io

from sequifier.preprocess.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_throttled_and_carry_rate_and_eta():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("scan", total_units=1000, every=2.0, clock=clock, stream=stream)
    for _ in range(10):  # 100 rows per 0.5 s: a line after 2 s and after 4 s only
        clock.now += 0.5
        progress.advance(100)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "[preprocess] scan: 400 rows, 200 rows/s, 40%, ETA 3.0s",
        "[preprocess] scan: 800 rows, 200 rows/s, 80%, ETA 1.0s",
    ]


def test_units_other_than_rows_and_unknown_totals():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("scan", total_units=4_000, every=1.0, clock=clock, stream=stream)
    clock.now += 90
    progress.advance(5_000, units=1_000)  # e.g. CSV bytes
    assert stream.getvalue().strip().endswith("5,000 rows, 56 rows/s, 25%, ETA 4m30s")
    unknown = Progress("scan", total_units=None, every=1.0, clock=clock, stream=io.StringIO())
    assert unknown.line(clock.now + 2) == "scan: 0 rows, 0 rows/s"
