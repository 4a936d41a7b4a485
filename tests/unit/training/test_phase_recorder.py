"""The phase recorder: exclusive phase times, step parts, and the report that sums to the total."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

import sequifier.training.profile_report as report
from sequifier.training.profile import ENVIRONMENT, PHASES, PhaseRecorder, timed
from sequifier.training.profile_report import PROFILE_FILE, report_profile


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def recorder(clock: FakeClock, monkeypatch) -> PhaseRecorder:
    monkeypatch.setenv(ENVIRONMENT, "0")  # restored (unset) after the test
    recorder = PhaseRecorder(clock)
    recorder.begin_command(enabled=True)
    return recorder


def test_a_nested_phase_counts_only_for_itself(recorder: PhaseRecorder, clock: FakeClock):
    with recorder.phase("training steps"):
        clock.advance(3.0)
        with recorder.phase("validation"):
            clock.advance(2.0)
            with recorder.phase("records"):
                clock.advance(0.5)
        clock.advance(1.0)
    with recorder.phase("validation"):
        clock.advance(1.0)
    assert recorder.seconds["training steps"] == pytest.approx(4.0)
    assert recorder.seconds["validation"] == pytest.approx(3.0)
    assert recorder.seconds["records"] == pytest.approx(0.5)
    assert set(recorder.rss_at_end) == {"start-up", "training steps", "validation", "records"}


def test_step_parts_count_calls_and_gathering_counts_batches(recorder: PhaseRecorder, clock: FakeClock):
    def slow(seconds: float) -> float:
        clock.advance(seconds)
        return seconds

    def batches():
        for batch in range(3):
            clock.advance(0.25)
            yield batch

    gathered = recorder.gathered(batches())
    assert [next(gathered) for _ in range(3)] == [0, 1, 2]
    assert recorder.step("forward+loss", torch.device("cpu"), slow, 0.5) == 0.5
    recorder.step("forward+loss", torch.device("cpu"), slow, 1.5)
    assert recorder.step_counts["data gathering"] == 3
    assert recorder.step_seconds["data gathering"] == pytest.approx(0.75)
    assert (recorder.step_counts["forward+loss"], recorder.step_seconds["forward+loss"]) == (2, pytest.approx(2.0))
    assert not recorder.synchronized


@pytest.mark.parametrize("process_age", [5.0, None])
def test_the_report_sums_to_the_total_with_other_as_the_rest(
    recorder: PhaseRecorder, clock: FakeClock, monkeypatch, process_age: float | None
):
    monkeypatch.setattr(report, "seconds_since_process_start", lambda: process_age)
    with recorder.phase("config"):
        clock.advance(1.0)
    with recorder.phase("export"):
        clock.advance(2.0)
    clock.advance(0.5)
    profile = report.profile_of(recorder, clock())
    seconds = {phase["name"]: phase["seconds"] for phase in profile["phases"]}
    assert list(seconds) == [*PHASES, "other"]
    assert seconds["config"] == pytest.approx(1.0) and seconds["export"] == pytest.approx(2.0)
    assert seconds["other"] == pytest.approx(0.5)
    if process_age is None:
        assert seconds["start-up"] is None and profile["total_seconds"] == pytest.approx(3.5)
        assert "unknown" in report.profile_table(profile)
    else:
        assert seconds["start-up"] == pytest.approx(1.5) and profile["total_seconds"] == pytest.approx(5.0)
    assert sum(value or 0 for value in seconds.values()) == pytest.approx(profile["total_seconds"])
    assert profile["peak_rss_mib"] >= max(phase["rss_mib_at_end"] or 0 for phase in profile["phases"])
    assert "export" in report.profile_table(profile)


def test_reporting_needs_the_flag_and_writes_into_each_log_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENVIRONMENT, "0")  # restored (unset) after the test
    recorder = PhaseRecorder()
    monkeypatch.setattr(report, "PROFILE", recorder)
    folders = (str(tmp_path / "a"), str(tmp_path / "b"))
    for folder in folders:
        (tmp_path / folder).mkdir()
    recorder.begin_command(enabled=False)
    report_profile(folders)
    assert not (tmp_path / "a" / PROFILE_FILE).exists() and capsys.readouterr().out == ""
    recorder.begin_command(enabled=True)
    report_profile(folders)
    assert json.loads((tmp_path / "a" / PROFILE_FILE).read_text()) == json.loads(
        (tmp_path / "b" / PROFILE_FILE).read_text()
    )
    assert "\nprofile: " in capsys.readouterr().out


def test_the_flag_reaches_spawned_processes_through_the_environment(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "0")  # restored (unset) after the test
    PhaseRecorder().begin_command(enabled=True)
    assert PhaseRecorder().enabled
    PhaseRecorder().begin_command(enabled=False)
    assert not PhaseRecorder().enabled


def test_timed_functions_count_as_their_phase(monkeypatch):
    import sequifier.training.profile as profile

    clock = FakeClock()
    monkeypatch.setattr(profile, "PROFILE", PhaseRecorder(clock))
    loading = timed("data loading")(lambda seconds: clock.advance(seconds) or "loaded")
    assert loading(0.75) == "loaded"
    assert profile.PROFILE.seconds["data loading"] == pytest.approx(0.75)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux's")
def test_the_peak_is_the_process_own_not_the_resident_set_of_the_parent_that_started_it():
    held = bytearray(b"\x01") * (384 * 2**20)  # resident in this process when it starts the child
    probe = "from sequifier.training.profile_report import peak_rss_mib; print(peak_rss_mib())"
    child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert len(held) and float(child.stdout) < 200
