"""The run summary: its time line (the throughput of the steps this process trained, or that none were left) and
what it says when no validation rows are there."""

from __future__ import annotations

from sequifier.training.metrics import METRIC_FIELDS
from sequifier.training.result import TrainResult
from sequifier.training.summary import run_summary


def result(samples_per_second: float) -> TrainResult:
    return TrainResult("m", 0, float("nan"), {}, {}, [], samples_per_second)


def test_a_run_that_trained_gives_its_throughput():
    assert "throughput 1,234 samples/s" in run_summary(result(1234.0), 5.0)


def test_a_run_resumed_after_its_last_step_says_no_step_was_left():
    summary = run_summary(result(float("nan")), 5.0)
    assert "no step left to train" in summary and "nan" not in summary


def test_a_validated_run_whose_metric_rows_are_gone_says_so_instead_of_asking_for_evaluation(tmp_path):
    (tmp_path / "validation-metrics.csv").write_text(",".join(METRIC_FIELDS) + "\n")
    validated = TrainResult("m", 2, 0.5, {}, {}, [], 10.0, (str(tmp_path),), evaluated=True)
    summary = run_summary(validated, 5.0)
    assert f"the metric files in {tmp_path} hold no validation rows" in summary and "add an `evaluation`" not in summary
    assert "add an `evaluation` section" in run_summary(result(10.0), 5.0)


def test_a_run_without_evaluation_is_not_said_to_have_lost_its_rows(tmp_path):
    (tmp_path / "validation-metrics.csv").write_text(",".join(METRIC_FIELDS) + "\n")
    unvalidated = TrainResult("m", 1, 2.5, {}, {}, [], 10.0, (str(tmp_path),))  # best by the training loss
    summary = run_summary(unvalidated, 5.0)
    assert "removed or emptied" not in summary and "(no validation: add an `evaluation` section" in summary
