"""The run summary's time line: the throughput of the steps this process trained, or that none were left."""

from __future__ import annotations

from sequifier.training.result import TrainResult
from sequifier.training.summary import run_summary


def result(samples_per_second: float) -> TrainResult:
    return TrainResult("m", 0, float("nan"), {}, {}, [], samples_per_second)


def test_a_run_that_trained_gives_its_throughput():
    assert "throughput 1,234 samples/s" in run_summary(result(1234.0), 5.0)


def test_a_run_resumed_after_its_last_step_says_no_step_was_left():
    summary = run_summary(result(float("nan")), 5.0)
    assert "no step left to train" in summary and "nan" not in summary
