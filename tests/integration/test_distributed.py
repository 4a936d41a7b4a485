"""Distributed training on real torch.distributed (gloo, CPU): spawned ranks and torchrun compute what one process
computes on the union of their samples, every real sample counts once, and rank 0 alone writes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import run_sequifier, write_yaml
from distributed_helpers import distributed, latest, metric_rows, pt_config, trained
from run_helpers import assert_onnx_matches_weights, project_with

from sequifier.config.compose import canonical_config, compose_config
from sequifier.config.resolve import resolve
from sequifier.distributed.launch import free_port

FULL_BATCH = 1024  # more views than the split holds: every epoch is one step over all of them


@pytest.fixture(autouse=True)
def temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The runs' own temporary folder: what a run or its ranks leave there (Hydra's folder of a torchrun rank,
    torch's spawn error files) would pile up in /tmp for every run."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    yield
    assert not [p.name for p in folder.iterdir() if p.name.startswith(("sequifier-", "pytorch-errorfile-"))]


def assert_same_training(ranked: Path, single: Path) -> None:
    """Same weights (max abs diff <= 1e-5), steps and logged losses as the single process."""
    a, b = latest(ranked), latest(single)
    for name, value in b["model_state_dict"].items():
        torch.testing.assert_close(a["model_state_dict"][name], value, atol=1e-5, rtol=0)
    assert a["progress"]["global_step"] == b["progress"]["global_step"] == 3
    for name in ("training-metrics.csv", "validation-metrics.csv"):
        ours, theirs = metric_rows(ranked, name), metric_rows(single, name)
        assert [(r["epoch"], r["target"], r["metric"]) for r in ours] == [
            (r["epoch"], r["target"], r["metric"]) for r in theirs
        ]
        for mine, reference in zip(ours, theirs):
            assert float(mine["value"]) == pytest.approx(float(reference["value"]), abs=1e-5)


def assert_onnx_matches_the_checkpoint(folder: Path) -> None:
    """The exported last model computes what the last checkpoint's weights compute in torch."""
    spec = resolve(canonical_config(compose_config(folder / "configs" / "train.yaml", [])), run_dir=folder, cwd=folder)
    onnx_path = next((folder / "models").glob("dist-last-*.onnx"))
    assert_onnx_matches_weights(spec, onnx_path, latest(folder)["model_state_dict"])


@pytest.fixture(scope="module")
def single_process(tmp_path_factory) -> Path:
    return trained(project_with(tmp_path_factory.mktemp("single"), "p", pt_config(batch_size=FULL_BATCH)))


PARALLELISMS = {
    "ddp": {"data_parallelism": "ddp"},
    "fsdp": {"data_parallelism": "fsdp"},
    "fsdp-cpu-offload": {"data_parallelism": "fsdp", "fsdp_cpu_offload": True},
}


@pytest.mark.parametrize(
    "parallelism",
    # fsdp-cpu-offload runs FSDP's path too
    [pytest.param(p, marks=pytest.mark.slow) if p == "fsdp" else p for p in PARALLELISMS],
)
def test_two_ranks_compute_what_one_process_computes_with_twice_the_batch(
    parallelism: str, tmp_path: Path, single_process: Path
):
    config = distributed(2, batch_size=FULL_BATCH // 2, **PARALLELISMS[parallelism])
    ranked = project_with(tmp_path, "p", config)
    result = run_sequifier(["train"], ranked)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "returned a view tensor" not in result.stderr  # FSDP2's alarm about views nothing changes in place
    assert_same_training(ranked, single_process)
    assert_onnx_matches_the_checkpoint(ranked)
    assert sorted(p.name for p in (ranked / "models").iterdir()) == ["dist-best-3.onnx", "dist-last-3.onnx"]
    assert not [p for p in ranked.rglob("*") if "rank" in p.name.lower()]


def test_uneven_shares_pad_with_repeats_that_never_count(tmp_path: Path, single_process: Path):
    ranked = trained(project_with(tmp_path, "p", distributed(3, batch_size=FULL_BATCH // 3)))
    assert_same_training(ranked, single_process)


def test_spawned_ranks_train_with_small_batches_export_and_infer(tmp_path: Path):
    folder = project_with(tmp_path, "p", pt_config(batch_size=16))
    result = run_sequifier(
        [
            "train",
            "global_training/distributed=ddp_gloo_cpu",
            "global_training.accumulation_steps=2",
            "+global_training.scheduler={name: ExponentialLR, gamma: 0.0}",
        ],
        folder,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("ExponentialLR keeps the learning rate at 0") == 1  # rank 0 warns for every rank
    log = (folder / "logs" / "dist" / "dist.log").read_text()
    assert "155 per process, 2 processes" in log
    threads = max(1, (os.cpu_count() or 1) // 2)
    assert f"torch intra-op threads: {threads} (this node's CPU cores / its processes)" in log
    infer = {"model_path": "models/dist-last-3.onnx", "data_path": "data/events-split2.parquet"}
    write_yaml(folder / "infer.yaml", infer | {"model_type": "generative"})
    result = run_sequifier(["infer", "--config-path", "infer.yaml"], folder)
    assert result.returncode == 0, result.stderr
    assert (folder / "outputs" / "predictions" / "dist-last-3" / "part-000.csv").is_file()


def torchrun_train(folder: Path) -> subprocess.CompletedProcess:
    """`torchrun --standalone --nproc-per-node 2 -m sequifier train` in `folder`, one thread per process."""
    torchrun = Path(sys.executable).with_name("torchrun")
    return subprocess.run(
        [str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "sequifier", "train"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def test_torchrun_attaches_and_its_world_size_wins(tmp_path: Path, single_process: Path):
    folder = project_with(tmp_path, "p", distributed(4, batch_size=FULL_BATCH // 2))
    result = torchrun_train(folder)
    assert result.returncode == 0, result.stderr[-3000:]
    said = result.stdout + result.stderr
    assert said.count("torchrun runs 2 processes; global_training.world_size 4 is ignored") == 1  # rank 0 logs
    assert said.count("parameters; training views") == 1
    assert_same_training(folder, single_process)
    assert_onnx_matches_the_checkpoint(folder)
    assert len(list((folder / "outputs").rglob("train.log"))) == 1  # rank 1 keeps Hydra's files elsewhere


def test_torchrun_processes_of_a_run_that_is_not_distributed_are_refused(tmp_path: Path):
    folder = project_with(tmp_path, "p", pt_config())
    result = torchrun_train(folder)
    assert result.returncode != 0
    assert "global_training.distributed: is false, but torchrun started 2 processes" in result.stderr
    assert not (folder / "models").exists()


def with_rank(rank: int, world_size: int, **address: str) -> dict[str, str]:
    """The environment torchrun gives a rank, made by hand (`address`: MASTER_ADDR / MASTER_PORT, if any)."""
    outside = {name: value for name, value in os.environ.items() if name not in ("MASTER_ADDR", "MASTER_PORT")}
    return outside | {"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank)} | address


def test_a_hand_made_rank_environment_without_an_address_or_with_a_port_in_use_is_named(tmp_path: Path):
    folder = project_with(tmp_path, "p", distributed(2))
    train = [sys.executable, "-m", "sequifier", "train"]
    unaddressed = subprocess.run(train, cwd=folder, capture_output=True, text=True, env=with_rank(0, 1), timeout=300)
    assert unaddressed.returncode == 2 and "Traceback" not in unaddressed.stderr
    assert "error: MASTER_ADDR and MASTER_PORT: are not set" in unaddressed.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        env = with_rank(0, 1, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        in_use = subprocess.run(train, cwd=folder, capture_output=True, text=True, env=env, timeout=300)
    assert in_use.returncode == 2 and "Traceback" not in in_use.stderr, in_use.stderr[-3000:]
    assert f"the group's store at 127.0.0.1:{port} cannot be used (address already in use)" in in_use.stderr
    assert not (folder / "models").exists()


def test_some_of_torchruns_variables_without_the_others_are_refused(tmp_path: Path):
    """RANK and WORLD_SIZE alone (a hand-written launcher script) join no group: every task would start a run."""
    folder = project_with(tmp_path, "p", distributed(2))
    env = {name: value for name, value in with_rank(1, 2).items() if name != "LOCAL_RANK"}
    result = subprocess.run(
        [sys.executable, "-m", "sequifier", "train"], cwd=folder, capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "the environment sets RANK and WORLD_SIZE but not LOCAL_RANK" in result.stderr
    assert "starting" not in result.stdout + result.stderr and not (folder / "models").exists()


@pytest.mark.parametrize("distributed_run", [True, False])
def test_a_rank_beyond_its_group_is_refused_before_any_job(tmp_path: Path, distributed_run: bool):
    """Rank 1 of 1 would wait 30 minutes for a group that cannot form, or, not distributed, train without a record."""
    folder = project_with(tmp_path, "p", distributed(2) if distributed_run else pt_config())
    env = with_rank(1, 1, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())) | {"LOCAL_RANK": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "sequifier", "train"], cwd=folder, capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "error: RANK: is 1 in the environment, but WORLD_SIZE is 1: a group's ranks run from 0" in result.stderr
    assert not (folder / "models").exists()


def test_a_sweep_under_torchrun_is_refused_before_any_job(tmp_path: Path):
    """Every torchrun process would run the whole sweep on its own (and wait for peers in another job)."""
    folder = project_with(tmp_path, "p", distributed(2))
    result = subprocess.run(
        [sys.executable, "-m", "sequifier", "train", "-m", "seed=1,2"],
        cwd=folder,
        capture_output=True,
        text=True,
        env=with_rank(0, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())),
        timeout=300,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "error: --multirun: under torchrun each of its 2 processes would run the whole sweep" in result.stderr
    assert not (folder / "multirun").exists() and not (folder / "models").exists()


def listening(port: int) -> bool:
    """Whether a socket of this machine listens on TCP `port` (rank 0's store, once it waits for the others)."""
    rows = [row for table in ("tcp", "tcp6") for row in (Path("/proc/net") / table).read_text().splitlines()[1:]]
    return any(row.split()[1].endswith(f":{port:04X}") and row.split()[3] == "0A" for row in rows)


def test_rank_0_waiting_for_peers_that_never_come_stops_on_sigterm(tmp_path: Path):
    folder = project_with(tmp_path, "p", distributed(2))
    port = free_port()
    env = with_rank(0, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    waiting = subprocess.Popen(
        [sys.executable, "-m", "sequifier", "train"], cwd=folder, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 120
    while not listening(port):
        if waiting.poll() is not None or time.monotonic() > deadline:
            waiting.kill()
            pytest.fail(f"rank 0 never listened on {port}: {waiting.communicate()[1][-3000:]}")
        time.sleep(0.05)
    time.sleep(0.5)  # inside the wait for rank 1
    waiting.terminate()
    _, stderr = waiting.communicate(timeout=30)
    assert waiting.returncode == 143 and stderr.rstrip().endswith("stopped by SIGTERM"), stderr[-3000:]


def test_a_merged_file_nccl_on_the_cpu_and_more_ranks_than_windows_are_refused(tmp_path: Path):
    config = distributed(2)
    config["global_training"]["read_format"] = "parquet"
    config["dataset"]["part"]["metadata_config_path"] = "configs/metadata_configs/events.json"
    folder = project_with(tmp_path, "p", config)
    result = run_sequifier(["train"], folder)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "single merged file" in result.stderr and "merge_output: false" in result.stderr
    result = run_sequifier(["train", "global_training.backend=nccl"], project_with(tmp_path, "q", distributed(2)))
    assert result.returncode == 2 and "global_training.backend" in result.stderr and "gloo" in result.stderr
    result = run_sequifier(["train", "global_training.world_size=400"], project_with(tmp_path, "r", distributed(2)))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "holds 310 windows for 400 processes" in result.stderr and "starting" not in result.stdout + result.stderr
    sweep = run_sequifier(
        ["train", "-m", "global_training.world_size=2,400"], project_with(tmp_path, "s", distributed(2))
    )
    assert sweep.returncode == 2 and "Traceback" not in sweep.stderr
    assert "holds 310 windows for 400 processes" in sweep.stderr and "global_training.world_size=400" in sweep.stderr
    assert not (tmp_path / "s" / "multirun").exists()  # refused before the first job trained


def started(folder: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sequifier", "train"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(path: Path, job: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert job.poll() is None, job.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def rank_processes(parent: int, marker: str = "spawn_main") -> list[int]:
    """The training processes of `parent`: its children whose command holds `marker` (spawned ranks run
    multiprocessing's spawn_main; torchrun's run `-m sequifier`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        parent_line = next(line for line in status.splitlines() if line.startswith("PPid:"))
        if int(parent_line.split()[1]) == parent and marker in command:
            found.append(int(entry.name))
    return sorted(found)


def starting_ranks(job: subprocess.Popen, count: int) -> list[int]:
    """The job's rank processes, as soon as `count` of them exist (they are still importing torch then)."""
    deadline = time.monotonic() + 60
    while len(ranks := rank_processes(job.pid)) < count:
        assert job.poll() is None and time.monotonic() < deadline, job.communicate()[1][-3000:]
        time.sleep(0.01)
    return ranks


def test_a_killed_rank_ends_the_job_at_once_naming_the_rank(tmp_path: Path):
    folder = project_with(tmp_path, "p", distributed(2, batch_size=4) | {"training_plan": {"epochs": 50}})
    job = started(folder)
    wait_for(folder / "checkpoints" / "dist" / "epoch-1.pt", job)
    victims = rank_processes(job.pid)
    assert len(victims) == 2
    os.kill(victims[-1], signal.SIGKILL)
    killed_at = time.monotonic()
    _, stderr = job.communicate(timeout=90)
    assert time.monotonic() - killed_at < 60
    assert job.returncode == 1  # nothing the user wrote failed: not the exit code of a refused input
    assert "rank 1 was killed by SIGKILL" in stderr and "Traceback" not in stderr.splitlines()[-1]
    assert "Terminating process" not in stderr  # the other rank is ended at once, not asked and waited for


def test_under_torchrun_the_rank_that_survives_a_killed_peer_says_so_in_one_line(tmp_path: Path):
    folder = project_with(tmp_path, "p", distributed(2, batch_size=4) | {"training_plan": {"epochs": 50}})
    torchrun = Path(sys.executable).with_name("torchrun")
    job = subprocess.Popen(
        [str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "sequifier", "train"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    wait_for(folder / "checkpoints" / "dist" / "epoch-1.pt", job)
    killed = rank_processes(job.pid, "sequifier")[-1]
    os.kill(killed, signal.SIGKILL)
    stdout, stderr = job.communicate(timeout=120)
    (Path(os.environ["TMPDIR"]) / f"sequifier-rank-1-{killed}").rmdir()  # left empty: a killed rank cleans up nothing
    assert job.returncode != 0
    said = [line for line in (stdout + stderr).splitlines() if "rank 0 lost its connection" in line]
    assert said and said[0].startswith("error: global_training.distributed: rank 0 lost its connection"), stderr[-3000:]
    assert "by peer" in said[0] and "GLHF" not in said[0]  # gloo says closed or reset
    assert "Error executing job" not in stderr and "RuntimeError" not in stderr


@pytest.mark.parametrize(
    "whole_group",
    # a signal to the parent alone is forwarded as in the sigterm-parent case of the next test
    [True, pytest.param(False, marks=pytest.mark.slow)],
    ids=["ctrl-c-to-the-group", "sigint-to-the-parent"],
)
def test_sigint_stops_the_spawned_ranks_gracefully(whole_group: bool, tmp_path: Path):
    """As a terminal's Ctrl-C (every process of the group) or `kill -INT` of the parent alone: the ranks finish
    their step, write latest.pt and end, and so does the parent, with the stopped code, before the prompt returns."""
    folder = project_with(tmp_path, "p", distributed(2, batch_size=4) | {"training_plan": {"epochs": 50}})
    job = started(folder)
    wait_for(folder / "checkpoints" / "dist" / "epoch-1.pt", job)
    ranks = rank_processes(job.pid)
    assert len(ranks) == 2
    (os.killpg if whole_group else os.kill)(job.pid, signal.SIGINT)
    _, stderr = job.communicate(timeout=90)
    assert job.returncode == 75, stderr[-3000:]
    assert not [pid for pid in ranks if Path(f"/proc/{pid}").exists()]
    assert "Traceback" not in stderr and "stopped on" in stderr
    assert latest(folder)["progress"]["global_step"] > 0


@pytest.mark.parametrize(
    "signal_number, to",
    # Ctrl-C to the whole group mid-training is the previous test's first case
    [
        pytest.param(signal.SIGINT, "group", marks=pytest.mark.slow),
        (signal.SIGTERM, "parent"),
        (signal.SIGTERM, "group"),
        (signal.SIGTERM, "one rank"),
    ],
    ids=["ctrl-c", "sigterm-parent", "sigterm-group", "sigterm-one-rank"],
)
def test_a_stop_while_the_ranks_start_is_a_graceful_stop(signal_number: int, to: str, tmp_path: Path):
    """A signal while the spawned ranks still import torch: it waits in the ranks until training acts on it, and
    the run stops as it would mid-training, not as a rank killed by SIGUSR2, nor trained to its end."""
    folder = project_with(tmp_path, "p", distributed(2, batch_size=4) | {"training_plan": {"epochs": 50}})
    job = started(folder)
    ranks = starting_ranks(job, 2)
    if to == "one rank":
        os.kill(ranks[-1], signal_number)
    else:
        (os.killpg if to == "group" else os.kill)(job.pid, signal_number)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 75, stderr[-3000:]
    assert "Traceback" not in stderr and "killed by" not in stderr and "stopped on" in stderr


@pytest.mark.parametrize("number", [signal.SIGUSR1, signal.SIGUSR2], ids=["usr1", "usr2"])
def test_a_user_signal_to_the_group_stops_gracefully_without_the_resource_trackers_tracebacks(
    number: int, tmp_path: Path
):
    """Slurm's --signal reaches every process of a step, multiprocessing's resource tracker and the parent too."""
    folder = project_with(tmp_path, "p", distributed(2, batch_size=4) | {"training_plan": {"epochs": 50}})
    job = started(folder)
    wait_for(folder / "checkpoints" / "dist" / "epoch-1.pt", job)
    os.killpg(job.pid, number)
    _, stderr = job.communicate(timeout=90)
    assert job.returncode == 75, stderr[-3000:]
    assert "Traceback" not in stderr and "resource_tracker" not in stderr and "stopped on" in stderr


def test_a_second_signal_stops_the_ranks_at_once_even_while_they_start(tmp_path: Path):
    """Starting ranks keep stop signals until training acts on them (training/stop.py), so the second one is sent
    as SIGKILL."""
    folder = project_with(tmp_path, "p", distributed(2, batch_size=4) | {"training_plan": {"epochs": 50}})
    job = started(folder)
    ranks = starting_ranks(job, 2)
    os.kill(job.pid, signal.SIGINT)
    time.sleep(0.05)
    os.kill(job.pid, signal.SIGINT)
    _, stderr = job.communicate(timeout=60)
    assert job.returncode == 130, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "stopped by Ctrl-C (SIGINT)" and "Traceback" not in stderr
    assert not [pid for pid in ranks if Path(f"/proc/{pid}").exists()]


@pytest.mark.parametrize("parallelism", ["ddp", pytest.param("fsdp", marks=pytest.mark.slow)])
def test_a_killed_job_resumes_exactly(parallelism: str, tmp_path: Path):
    training = {"batch_size": 16, "save_interval_batches": 3, **PARALLELISMS[parallelism]}
    config = distributed(2, **training) | {"training_plan": {"epochs": 4}}
    reference = trained(project_with(tmp_path, "reference", config))
    folder = project_with(tmp_path, "p", config)
    job = started(folder)
    wait_for(folder / "checkpoints" / "dist" / "batch-12.pt", job)
    os.killpg(job.pid, signal.SIGKILL)
    job.communicate()
    assert not (folder / "models").exists()
    trained(folder, "global_training.resume.policy=if_exists")
    resumed, uninterrupted = latest(folder), latest(reference)
    for name, value in uninterrupted["model_state_dict"].items():
        assert torch.equal(resumed["model_state_dict"][name], value), name
    other = run_sequifier(["train", "global_training.resume.policy=if_exists", "global_training.world_size=3"], folder)
    assert other.returncode == 2 and "global_training.world_size: is 3 but" in other.stderr
    for name in ("training-metrics.csv", "validation-metrics.csv"):
        rows = [
            [{k: v for k, v in row.items() if k != "run_id"} for row in metric_rows(f, name)]
            for f in (folder, reference)
        ]
        assert rows[0] == rows[1]
