"""Slurm launcher values out of range and sbatch's refusals are one-line user errors; a stop that Submitit does not
requeue ends the job as stopped and resumable; a rank's own error is the error of its multi-task job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import tiny_train_config, write_yaml

from sequifier.commands import submitit_stop
from sequifier.commands.launcher import check_launcher_keys
from sequifier.commands.slurm_submission import raised_while_submitting, refused_submission
from sequifier.commands.sweep import RESULT_FILE, SWEEP_ID_VARIABLE, read_results, sweep_exit_code
from sequifier.config.compose import read_entry
from sequifier.config.errors import UserError


@pytest.fixture
def entry(tmp_path: Path):
    return read_entry(write_yaml(tmp_path / "configs" / "train.yaml", tiny_train_config()))


@pytest.mark.parametrize(
    "setting",
    [
        "tasks_per_node=-2",
        "tasks_per_node=0",
        "nodes=0",
        "cpus_per_task=0",
        "signal_delay_s=-3",
        "mem_gb=-1",
        "timeout_min=0",
        "timeout_min=-5",
    ],
)
def test_launcher_values_out_of_range_are_refused_before_submission(entry, setting: str):
    override = f"hydra.launcher.{setting}"
    with pytest.raises(UserError) as refused:
        check_launcher_keys(entry, [["hydra/launcher=slurm_ddp", override]])
    field = setting.split("=")[0]
    assert refused.value.where == override and f"the launcher's {field} must be at least" in refused.value.problem


def test_a_time_limit_below_one_minute_says_why(entry):
    with pytest.raises(UserError, match="no time limit"):
        check_launcher_keys(entry, [["hydra/launcher=submitit_slurm", "hydra.launcher.timeout_min=0"]])


def test_launcher_values_in_range_pass(entry):
    settings = ["timeout_min=1", "signal_delay_s=0", "tasks_per_node=1", "nodes=1", "mem_gb=4", "max_num_timeout=0"]
    check_launcher_keys(entry, [["hydra/launcher=slurm_ddp", *(f"hydra.launcher.{s}" for s in settings)]])


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (
            "sbatch: error: invalid partition specified: nosuch\n"
            "sbatch: error: Batch job submission failed: Invalid partition name specified",
            "hydra.launcher.partition",
        ),
        ('sbatch: error: Invalid numeric value "-2" for --ntasks-per-node.', "hydra.launcher.tasks_per_node"),
        ("sbatch: error: Invalid --signal specification", "hydra.launcher.signal_delay_s"),
        ("sbatch: error: Batch job submission failed: Node count specification invalid", "hydra.launcher.nodes"),
        ("sbatch: error: Batch job submission failed: More processors requested than permitted", "hydra.launcher"),
    ],
)
def test_sbatchs_refusal_names_the_setting_when_its_message_tells(message: str, where: str):
    error = refused_submission(message)
    assert error.where == where and "sbatch: error" not in error.problem
    assert message.splitlines()[-1].split("error: ")[-1] in error.problem


def test_a_failure_of_sbatch_is_told_from_a_failure_of_a_job():
    def _submit_command():
        raise RuntimeError("sbatch: error: ...")

    def results():
        raise RuntimeError("Job (task=0) failed during processing")

    for call, while_submitting in ((_submit_command, True), (results, False)):
        with pytest.raises(RuntimeError) as raised:
            call()
        assert raised_while_submitting(raised.value) is while_submitting


FAILING_SBATCH = """#!/bin/sh
echo "sbatch: error: invalid partition specified: nosuch" >&2
echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
exit 1
"""


def test_a_job_that_sbatch_refuses_ends_the_command_with_one_error_line(tmp_path: Path):
    write_yaml(tmp_path / "configs" / "train.yaml", tiny_train_config())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(FAILING_SBATCH)
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 1\n")  # Submitit looks for it before submitting; never run
    for tool in ("sbatch", "srun"):
        (bin_dir / tool).chmod(0o755)
    command = [sys.executable, "-m", "sequifier", "train", "-m", "hydra/launcher=submitit_slurm"]
    command += ["hydra.launcher.partition=nosuch", "--skip-metadata", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: hydra.launcher.partition: invalid partition specified: nosuch; "
        "Batch job submission failed: Invalid partition name specified"
    ]
    assert "Traceback" not in done.stderr and "sweep summary" not in done.stdout


class FakeSubmititHandler:
    """Submitit's signal handler as far as the requeue decision reads it."""

    def __init__(self, countdown: int, timed_out: bool) -> None:
        self._delayed = SimpleNamespace(_timeout_countdown=countdown)
        self.timed_out = timed_out

    def has_timed_out(self) -> bool:
        return self.timed_out

    def checkpoint_and_try_requeue(self, signum, frame) -> None:
        from submitit.core.utils import UncompletedJobError

        raise UncompletedJobError("Job not requeued because: timed-out too many times.")


@pytest.fixture
def handler_on_usr2(monkeypatch):
    monkeypatch.setattr(submitit_stop, "requeue_signal", lambda: signal.SIGUSR2)
    previous = signal.getsignal(signal.SIGUSR2)

    def install(handler) -> None:
        signal.signal(signal.SIGUSR2, handler)

    yield install
    signal.signal(signal.SIGUSR2, previous)


@pytest.mark.parametrize(
    ("countdown", "timed_out", "requeues"), [(0, True, False), (0, False, True), (1, True, True), (-1, False, False)]
)
def test_the_other_ranks_reckon_whether_submitit_requeues_as_it_does(handler_on_usr2, countdown, timed_out, requeues):
    handler_on_usr2(FakeSubmititHandler(countdown, timed_out).checkpoint_and_try_requeue)
    assert submitit_stop.submitit_requeues() is requeues


def test_a_handler_that_is_not_submitits_is_taken_to_requeue(handler_on_usr2):
    handler_on_usr2(signal.SIG_DFL)
    assert submitit_stop.submitit_requeues()


@pytest.mark.parametrize("rank", [0, 1])
def test_a_stop_that_submitit_does_not_requeue_ends_the_task(handler_on_usr2, monkeypatch, rank: int):
    import submitit

    handler_on_usr2(FakeSubmititHandler(0, True).checkpoint_and_try_requeue)
    monkeypatch.setattr(submitit, "JobEnvironment", lambda: SimpleNamespace(global_rank=rank))
    monkeypatch.setattr("sequifier.distributed.submitit_task.requeue_signal", lambda: signal.SIGUSR2)
    assert submitit_stop.requeued_after_stop() is False


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["ok", "ok"], 0),
        (["ok", "stopped"], 75),
        (["stopped"], 75),
        (["stopped", "failed"], 1),
        (["ok", "failed by the user"], 2),
        (["stopped", "failed by the user"], 2),
        (["failed by the user", "failed"], 1),
        ([], 1),
    ],
)
def test_a_sweeps_exit_code_says_how_its_jobs_ended(statuses, code):
    results = [
        {"status": "failed", "user_error": True} if status == "failed by the user" else {"status": status}
        for status in statuses
    ]
    assert sweep_exit_code(results) == code


def test_a_ranks_own_error_is_its_jobs_error(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(SWEEP_ID_VARIABLE, "this")
    job = tmp_path / "0"
    job.mkdir()
    gloo = {"job": 0, "status": "failed", "error": "RuntimeError: Connection closed by peer", "sweep_id": "this"}
    shard = "data/s-1.pt: not a readable PT shard"
    rank = {"job": 0, "status": "failed", "error": shard, "user_error": True, "rank": 1, "sweep_id": "this"}
    (job / RESULT_FILE).write_text(json.dumps(gloo))
    (job / "result-rank1.json").write_text(json.dumps(rank))
    (result,) = read_results(tmp_path)
    assert result["error"] == f"{shard} (rank 1)"
    assert json.loads((job / RESULT_FILE).read_text())["error"] == f"{shard} (rank 1)"


def test_an_earlier_sweeps_rank_error_is_not_this_jobs(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(SWEEP_ID_VARIABLE, "this")
    gloo = {"job": 0, "status": "failed", "error": "RuntimeError: Connection closed by peer", "sweep_id": "this"}
    old = {"status": "failed", "error": "old", "user_error": True, "rank": 1, "sweep_id": "earlier"}
    (tmp_path / RESULT_FILE).write_text(json.dumps(gloo))
    (tmp_path / "result-rank1.json").write_text(json.dumps(old))
    assert read_results(tmp_path)[0]["error"] == gloo["error"]
