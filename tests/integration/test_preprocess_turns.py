"""Preprocess runs swap their outputs into a folder in turn, train reads a set no swap is changing, and a set that
a killed preprocess left half swapped is refused by train until the next preprocess repairs it."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import tiny_train_config
from reference_helpers import KILLED_IN_THE_SWAP
from run_helpers import project_with

ROOT = Path(__file__).resolve().parents[2]
PREPROCESS = ["preprocess", "--config-path", "configs/preprocess-parquet.yaml", "--quiet"]

HOLD_THE_DATA_FOLDER = """
import fcntl, os, sys, time
descriptor = os.open("data", os.O_RDONLY)
fcntl.flock(descriptor, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def _outputs(project: Path) -> dict[str, str]:
    files = [*sorted((project / "data").glob("events-split*")), project / "configs/metadata_configs/events.json"]
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def _sequifier(project: Path, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sequifier", *args],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _holding_the_data_folder(project: Path) -> subprocess.Popen:
    """A process holding the lock a preprocess run holds while it swaps its outputs in, until its stdin closes."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_DATA_FOLDER],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def _waits_while_held(project: Path, args: list[str], said: str) -> tuple[int, dict, dict]:
    """Run `sequifier ARGS` while the data folder is held, until it says `said`; its exit code, and the outputs
    before and while it waited."""
    before = _outputs(project)
    holder = _holding_the_data_folder(project)
    log = project / "command.log"
    with open(log, "w") as output:
        command = subprocess.Popen(
            [sys.executable, "-m", "sequifier", *args], cwd=project, stdout=output, stderr=output
        )
    deadline = time.monotonic() + 120
    while said not in log.read_text() and command.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    waiting = command.poll()
    during = _outputs(project)
    holder.stdin.close()
    holder.wait()
    command.wait(timeout=300)
    assert said in log.read_text() and waiting is None, log.read_text()
    assert command.returncode == 0, log.read_text()
    return command.returncode, before, during


def test_a_preprocess_run_waits_for_another_run_swapping_into_the_folder(tmp_path):
    project = project_with(tmp_path, "project", tiny_train_config())
    (project / "configs/preprocess-parquet.yaml").write_text(
        (project / "configs/preprocess-parquet.yaml").read_text().replace("seed: 1010", "seed: 7")
    )
    _, before, during = _waits_while_held(project, PREPROCESS, "waiting for another command using")
    assert during == before
    assert _outputs(project) != before  # another seed, other splits


def test_train_waits_for_a_preprocess_run_swapping_into_its_data_folder(tmp_path):
    project = project_with(tmp_path, "project", tiny_train_config())
    _waits_while_held(project, ["train"], "waiting for a preprocess run to finish swapping")


def test_train_refuses_a_set_that_a_killed_preprocess_left_half_swapped_until_preprocess_runs_again(tmp_path):
    project = project_with(tmp_path, "project", tiny_train_config())
    config = project / "configs/preprocess-parquet.yaml"
    config.write_text(config.read_text().replace("seed: 1010", "seed: 7"))
    before = _outputs(project)
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED_IN_THE_SWAP + "import sys\nfrom sequifier import cli\ncli.main(sys.argv[1:])",
            *PREPROCESS,
        ],
        cwd=project,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert killed.returncode == -signal.SIGKILL
    mixed = _outputs(project)
    assert mixed != before and mixed["events.json"] == before["events.json"]  # one split of the new run swapped in

    refused = _sequifier(project, ["train"])
    _, stderr = refused.communicate(timeout=300)
    assert refused.returncode == 2, stderr
    assert "holds a mix of two preprocess runs' outputs" in stderr and "Traceback" not in stderr, stderr
    assert _outputs(project) == mixed  # train changes nothing

    repaired = _sequifier(project, PREPROCESS)
    assert repaired.wait(timeout=300) == 0
    trained = _sequifier(project, ["train"])
    _, stderr = trained.communicate(timeout=300)
    assert trained.returncode == 0, stderr
