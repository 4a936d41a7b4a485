"""Progress displays: a bar with rate and ETA on a terminal, bounded plain lines elsewhere, silence on --quiet."""

from __future__ import annotations

import io
import re

import pytest

from sequifier import progress
from sequifier.progress import Progress, set_quiet

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def not_quiet():
    set_quiet(False)
    yield
    set_quiet(False)


def run_loop(display: Progress, clock: FakeClock, steps: int, seconds_per_step: float) -> None:
    for step in range(steps):
        clock.now += seconds_per_step
        display.advance(10, position=step + 1, detail=lambda: "loss 1.2345")


def test_without_a_terminal_lines_come_at_most_once_per_interval_without_control_characters():
    stream, clock = io.StringIO(), FakeClock()
    display = Progress("epoch 1 (train)", total=100, unit="samples", stream=stream, every=30.0, clock=clock)
    run_loop(display, clock, steps=100, seconds_per_step=1.0)
    display.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 100 // 30
    assert not CONTROL.search(stream.getvalue())
    assert lines[0].startswith("epoch 1 (train): 300 samples, 10 samples/s, loss 1.2345, elapsed 30.0s, 30%")
    assert lines[0].endswith("ETA 1m10s")


def test_on_a_terminal_a_bar_shows_share_rate_eta_and_running_loss():
    stream, clock = Terminal(), FakeClock()
    display = Progress("epoch 1 (train)", total=100, unit="samples", stream=stream, clock=clock)
    run_loop(display, clock, steps=50, seconds_per_step=1.0)
    shown = stream.getvalue()
    display.close()
    assert "\r" in shown
    assert "epoch 1 (train):" in shown and "samples/s" in shown and "loss 1.2345" in shown
    assert re.search(r"\d+%\|", shown)
    assert "<" in shown.split("[")[-1]  # elapsed<remaining


@pytest.mark.parametrize("silenced_by", ["quiet", "disabled"])
def test_quiet_or_a_disabled_display_writes_nothing(silenced_by: str):
    stream, clock = Terminal(), FakeClock()
    set_quiet(silenced_by == "quiet")
    display = Progress("x", total=10, stream=stream, clock=clock, every=1.0, enabled=silenced_by != "disabled")
    run_loop(display, clock, steps=10, seconds_per_step=5.0)
    display.close()
    assert stream.getvalue() == ""


def test_a_resumed_display_measures_the_eta_from_where_it_started():
    stream, clock = io.StringIO(), FakeClock()
    display = Progress("e", total=100, unit="samples", initial_position=50, stream=stream, every=10.0, clock=clock)
    for position in range(51, 61):
        clock.now += 1.0
        display.advance(1, position=position)
    assert stream.getvalue().strip().endswith("60%, ETA 40.0s")


def test_durations_read_naturally():
    assert [progress.duration(s) for s in (4.25, 187, 7500)] == ["4.2s", "3m07s", "2h05m"]
