"""Cluster submission on a real one-node Slurm (scripts/slurm-test-cluster): Submitit sweeps with a summary, a
multi-task job as one distributed run, the sbatch + torchrun template, a time-limit signal followed by a requeue
that resumes exactly, and a failing job reported in the sweep summary. Every wait on a job has a timeout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config, write_yaml
from distributed_helpers import distributed, latest, metric_rows, pt_config, trained
from run_helpers import project_with

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]
CLUSTER_DIR = Path(os.environ.get("SEQUIFIER_SLURM_DIR", "/tmp/sequifier-slurm"))
START_IT = 'no Slurm test cluster answers; start one (root, Debian) with: eval "$(scripts/slurm-test-cluster start)"'
JOB_TIMEOUT_S = 180


def cluster_environment() -> dict[str, str] | None:
    """The environment that reaches the test cluster (its slurm.conf, the sacct stand-in), or None."""
    conf = Path(os.environ.get("SLURM_CONF", CLUSTER_DIR / "slurm.conf"))
    stopped = "SLURM_CONF" not in os.environ and not (CLUSTER_DIR / "run" / "slurmctld.pid").is_file()
    if stopped or not conf.is_file() or shutil.which("sinfo") is None:
        return None
    path = os.pathsep.join([str(conf.parent / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": path, "OMP_NUM_THREADS": "1"}
    try:
        states = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return None
    return env if states.returncode == 0 and {"idle", "mixed", "allocated"} & set(states.stdout.split()) else None


@pytest.fixture(scope="module")
def cluster() -> dict[str, str]:
    env = cluster_environment()
    if env is None:
        if os.environ.get("CI") == "true":
            pytest.fail(START_IT + " (CI=true: a missing cluster fails)")
        pytest.skip(START_IT)
    return env


def slurm(args: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=30, check=True).stdout


def submitted(sweep: Path, cwd: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "sequifier", "train", "-m", *args, f"hydra.sweep.dir={sweep}"]
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(job: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = job.communicate(timeout=JOB_TIMEOUT_S)
    return job.returncode, stdout, stderr


def daemon_logs(env: dict[str, str], lines: int = 40) -> str:
    """The last lines of the cluster's slurmctld and slurmd logs, for a failure message."""
    folder = Path(env["SLURM_CONF"]).parent / "log"
    tails = []
    for name in ("slurmctld.log", "slurmd.log"):
        path = folder / name
        text = path.read_text(errors="replace").splitlines()[-lines:] if path.is_file() else ["(none)"]
        tails.append(f"--- {name}\n" + "\n".join(text))
    return "\n".join(tails)


def sweep_jobs(sweep: Path) -> list[dict]:
    return sorted((json.loads(p.read_text()) for p in sweep.rglob("result.json")), key=lambda job: job["job"])


def job_logs(sweep: Path) -> str:
    return "".join(p.read_text() for p in sorted((sweep / ".submitit").rglob("*_log.*")))


def submitted_ids(sweep: Path) -> list[str]:
    """The Slurm job ids of a sweep: the names of its Submitit folders."""
    return sorted(folder.name for folder in (sweep / ".submitit").iterdir() if folder.is_dir())


def slurm_states(sweep: Path, env: dict[str, str]) -> list[str]:
    """The Slurm state of every job the sweep submitted, once none is pending or running any more.

    Submitit returns a job's result as soon as its result file exists; Slurm marks the job ended only when
    the job's processes have exited after writing it.
    """
    ids = submitted_ids(sweep)
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while True:
        query = ["sacct", "-o", "JobID,State,NodeList", "--parsable2", *[a for i in ids for a in ("-j", i)]]
        states = [line.split("|")[1] for line in slurm(query, env).splitlines()[1:]]
        if not {"PENDING", "RUNNING", "COMPLETING"} & set(states) or time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def same_weights_and_metrics(folder: Path, reference: Path) -> None:
    ours, theirs = latest(folder), latest(reference)
    for name, value in theirs["model_state_dict"].items():
        assert torch.equal(ours["model_state_dict"][name], value), name
    for name in ("training-metrics.csv", "validation-metrics.csv"):
        rows = [
            [{k: v for k, v in row.items() if k != "run_id"} for row in metric_rows(f, name)]
            for f in (folder, reference)
        ]
        assert rows[0] == rows[1], name


def test_a_sweep_runs_one_slurm_job_per_combination_with_a_summary(cluster, reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(evaluation=True))
    sweep = reference_project / "sweep"
    job = submitted(
        sweep, reference_project, cluster, "hydra/launcher=submitit_slurm", "global_training.learning_rate=1e-3,3e-3"
    )
    returncode, stdout, stderr = finished(job)
    assert returncode == 0, stderr[-3000:]
    jobs = sweep_jobs(sweep)
    assert [j["model_name"] for j in jobs] == ["tiny-learning_rate=0.001", "tiny-learning_rate=0.003"]
    assert all(j["status"] == "ok" for j in jobs)
    assert slurm_states(sweep, cluster) == ["COMPLETED", "COMPLETED"]
    for j in jobs:
        assert f"{j['monitored_loss']:.4f}" in stdout and "global_training.resume.policy=if_exists" in j["overrides"]
        assert any(p.name.startswith(f"{j['model_name']}-last-") for p in (reference_project / "models").iterdir())
    assert "sweep summary" in (sweep / "summary.txt").read_text()


@pytest.fixture(scope="module")
def spawned(tmp_path_factory) -> Path:
    """Two ranks spawned on this machine, the reference of the runs that Slurm starts."""
    return trained(project_with(tmp_path_factory.mktemp("spawned"), "p", distributed(2, batch_size=16)))


def test_a_two_task_job_is_one_ddp_run_equal_to_the_spawned_run(cluster, tmp_path: Path, spawned: Path):
    folder = project_with(tmp_path, "p", distributed(3, batch_size=16))
    sweep = tmp_path / "sweep"
    returncode, stdout, stderr = finished(submitted(sweep, folder, cluster, "hydra/launcher=slurm_ddp"))
    assert returncode == 0, stderr[-3000:]
    (result,) = sweep_jobs(sweep)
    assert result["status"] == "ok" and result["model_name"] == "dist"
    logs = job_logs(sweep)
    assert "the Submitit job runs 2 processes; global_training.world_size 3 is ignored" in logs
    assert "155 per process, 2 processes" in logs
    assert sorted(p.name for p in (folder / "models").iterdir()) == ["dist-best-3.onnx", "dist-last-3.onnx"]
    same_weights_and_metrics(folder, spawned)


def test_the_sbatch_template_runs_torchrun_and_trains_the_same_run(cluster, tmp_path: Path, spawned: Path):
    folder = project_with(tmp_path, "p", distributed(2, batch_size=16))
    job_id = slurm(["sbatch", "--parsable", str(ROOT / "examples" / "slurm" / "train.sbatch")], cluster, folder).strip()
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while (state := slurm(["sacct", "-o", "JobID,State,NodeList", "--parsable2", "-j", job_id], cluster)) and any(
        s in state for s in ("PENDING", "RUNNING", "COMPLETING")
    ):
        assert time.monotonic() < deadline, f"job {job_id} did not end"
        time.sleep(0.5)
    output = (folder / f"slurm-{job_id}.out").read_text()
    assert f"{job_id}|COMPLETED|" in state, output[-3000:]
    same_weights_and_metrics(folder, spawned)


def wait_for(condition, what: str, job: subprocess.Popen) -> None:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not condition():
        assert job.poll() is None, job.communicate()[1][-3000:]
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


REQUEUED = {
    "one task": ("submitit_slurm", pt_config(batch_size=16, num_threads=1, save_interval_batches=10), 20),
    "two tasks": ("slurm_ddp", distributed(2, batch_size=16, save_interval_batches=10), 10),
}


@pytest.mark.parametrize("case", list(REQUEUED))
def test_a_time_limit_signal_requeues_the_job_which_resumes_exactly(cluster, tmp_path: Path, case: str):
    launcher, config, epochs = REQUEUED[case]
    config = config | {"training_plan": {"epochs": epochs}}
    reference = trained(project_with(tmp_path, "reference", config))
    folder = project_with(tmp_path, "p", config)
    sweep = tmp_path / "sweep"
    job = submitted(sweep, folder, cluster, f"hydra/launcher={launcher}")
    wait_for((folder / "checkpoints" / "dist" / "batch-30.pt").exists, "training did not reach batch 30", job)
    (job_id,) = submitted_ids(sweep)
    slurm(["scancel", "--signal=USR2", job_id], cluster)  # what Slurm sends signal_delay_s before the time limit

    def held_after_requeue() -> bool:
        return "BeginTime" in slurm(["squeue", "-h", "-r", "-t", "PENDING", "-j", job_id, "-o", "%r"], cluster)

    def first_attempt_gone() -> bool:  # a job started while slurmd still ends its last attempt fails to launch
        node = slurm(["scontrol", "-o", "show", "node"], cluster)
        return " CPUAlloc=0 " in node and "COMPLETING" not in node

    wait_for(held_after_requeue, "the job was not requeued", job)
    wait_for(first_attempt_gone, "the job's first attempt did not end", job)
    time.sleep(2)  # slurmd refuses a launch credential made in the same second as its last attempt's kill
    slurm(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], cluster)  # Slurm holds a requeue ~2 minutes
    returncode, stdout, stderr = finished(job)
    logs = job_logs(sweep)
    assert returncode == 0, f"{stderr[-3000:]}\n--- job logs\n{logs[-3000:]}\n{daemon_logs(cluster)}"
    assert "stopped on SIGUSR2" in logs and "Exiting gracefully after preemption/timeout" in logs
    assert "resuming dist from" in logs
    (result,) = sweep_jobs(sweep)
    assert result["status"] == "ok"
    same_weights_and_metrics(folder, reference)


def test_a_failing_job_shows_its_error_in_the_summary_and_the_command_fails(cluster, reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    (reference_project / "data" / "events-split1.parquet").write_bytes(b"not parquet")
    sweep = reference_project / "sweep"
    job = submitted(sweep, reference_project, cluster, "hydra/launcher=submitit_slurm", "seed=1", "--skip-metadata")
    returncode, stdout, stderr = finished(job)
    assert returncode == 2, stderr[-3000:]  # a data error
    (result,) = sweep_jobs(sweep)
    assert result["status"] == "failed" and "events-split1.parquet" in result["error"]
    assert "failed" in stdout and "events-split1.parquet" in stdout


def test_a_job_that_dies_without_a_result_ends_the_command_with_slurms_reason(cluster, tmp_path: Path):
    config = pt_config(batch_size=16, num_threads=1, save_interval_batches=10) | {"training_plan": {"epochs": 30}}
    folder = project_with(tmp_path, "p", config)
    sweep = tmp_path / "sweep"
    job = submitted(sweep, folder, cluster, "hydra/launcher=submitit_slurm")
    wait_for((folder / "checkpoints" / "dist" / "batch-30.pt").exists, "training did not reach batch 30", job)
    (job_id,) = submitted_ids(sweep)
    slurm(["scancel", job_id], cluster)
    returncode, stdout, stderr = finished(job)
    assert returncode == 1
    assert "has not produced any output (state: CANCELLED)" in stderr
    assert "sweep summary" in stdout and "no job results" in stdout


def test_a_job_that_sbatch_refuses_is_one_error_naming_the_setting(cluster, tmp_path: Path):
    folder = project_with(tmp_path, "p", distributed(2))
    sweep = tmp_path / "sweep"
    returncode, stdout, stderr = finished(
        submitted(sweep, folder, cluster, "hydra/launcher=slurm_ddp", "hydra.launcher.partition=nosuch")
    )
    assert returncode == 2, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: hydra.launcher.partition: ") and "nosuch" in errors[0]
    assert "Traceback" not in stderr and "sweep summary" not in stdout


@pytest.mark.parametrize("case", list(REQUEUED))
def test_a_stop_that_submitit_does_not_requeue_ends_the_job_as_stopped_and_resumable(
    cluster, tmp_path: Path, case: str
):
    launcher, config, _ = REQUEUED[case]
    folder = project_with(tmp_path, "p", config | {"training_plan": {"epochs": 30}})
    sweep = tmp_path / "sweep"
    no_requeue = ("hydra.launcher.timeout_min=1", "hydra.launcher.signal_delay_s=1", "hydra.launcher.max_num_timeout=0")
    job = submitted(sweep, folder, cluster, f"hydra/launcher={launcher}", *no_requeue)
    wait_for((folder / "checkpoints" / "dist" / "batch-30.pt").exists, "training did not reach batch 30", job)
    (job_id,) = submitted_ids(sweep)
    slurm(["scancel", "--signal=USR2", job_id], cluster)  # a time-limit signal, the last one Submitit requeues after
    returncode, stdout, stderr = finished(job)
    logs = job_logs(sweep)
    assert returncode == 75, f"{stderr[-3000:]}\n--- job logs\n{logs[-3000:]}"
    assert "Traceback" not in stderr and "stopped on SIGUSR2" in logs
    (result,) = sweep_jobs(sweep)
    latest_checkpoint = str(folder / "checkpoints" / "dist" / "latest.pt")
    assert result["status"] == "stopped" and latest_checkpoint in result["error"]
    assert "stopped" in stdout and latest_checkpoint in stdout
    assert slurm_states(sweep, cluster) == ["COMPLETED"]  # every task ended, none waited for the time limit


def test_a_data_error_of_rank_1_alone_is_the_jobs_error_with_its_rank(cluster, tmp_path: Path):
    folder = project_with(tmp_path, "p", distributed(2))
    split = folder / "data" / "events_pt-split0"
    described = json.loads((split / "metadata.json").read_text())
    described["batch_files"].reverse()  # 156 then 154 windows: rank 0 reads the first file alone, rank 1 both
    (split / "metadata.json").write_text(json.dumps(described))
    shard = split / described["batch_files"][1]["path"]
    shard.write_bytes(shard.read_bytes()[:20000])
    sweep = tmp_path / "sweep"
    returncode, stdout, stderr = finished(submitted(sweep, folder, cluster, "hydra/launcher=slurm_ddp"))
    assert returncode == 2, stderr[-3000:]  # rank 1's data error
    (result,) = sweep_jobs(sweep)
    assert result["status"] == "failed" and "not a readable PT shard" in result["error"], result["error"]
    assert result["error"].endswith("(rank 1)") and shard.name in result["error"]
    assert "Connection closed by peer" not in stdout and f"{shard.name}: not a readable PT shard" in stdout
