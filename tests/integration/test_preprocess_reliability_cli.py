"""`sequifier preprocess` as a user meets failures: the previous outputs survive, killed runs leave nothing behind."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from conftest import run_sequifier

CONFIG = "configs/preprocess-parquet.yaml"


def outputs(project: Path) -> dict[str, str]:
    found = {}
    for folder in (project / "data", project / "configs" / "metadata_configs"):
        for path in sorted(folder.rglob("*")):
            visible = not any(part.startswith(".") for part in path.relative_to(project).parts)
            if visible and path.is_file() and path.stem not in ("events", "big"):
                found[str(path.relative_to(project))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def hidden(project: Path) -> list[str]:
    folders = (project / "data", project / "configs" / "metadata_configs")
    return [p.name for folder in folders for p in folder.iterdir() if p.name.startswith(".")]


def test_a_failed_run_keeps_the_previous_outputs_and_says_so(reference_project: Path):
    before = outputs(reference_project)
    table = pq.read_table(reference_project / "data" / "events.parquet")
    amounts = table.column("amount").to_numpy().copy()
    amounts[[10, 11]] = [1.7e308, -1.7e308]
    pq.write_table(
        table.set_column(table.schema.get_field_index("amount"), "amount", pa.array(amounts)),
        reference_project / "data" / "events.parquet",
    )
    result = run_sequifier(["preprocess", "--config-path", CONFIG], reference_project)
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert last.startswith("error: amount: normalization overflows") and last.endswith("previous outputs are unchanged")
    assert outputs(reference_project) == before and hidden(reference_project) == []


def test_reserved_spellings_are_merged_with_a_warning_and_mask_is_refused(reference_project: Path):
    table = pq.read_table(reference_project / "data" / "events.parquet")
    events = table.column("event").to_pylist()
    events[3], events[8] = "[other]", "[unknown]"
    column = table.schema.get_field_index("event")
    pq.write_table(table.set_column(column, "event", pa.array(events)), reference_project / "data" / "events.parquet")
    result = run_sequifier(["preprocess", "--config-path", CONFIG], reference_project)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("warning: event holds the value") == 2
    events[5] = "[mask]"
    pq.write_table(table.set_column(column, "event", pa.array(events)), reference_project / "data" / "events.parquet")
    result = run_sequifier(["preprocess", "--config-path", CONFIG], reference_project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: event: holds the value '[mask]'")


def test_a_killed_run_takes_its_workers_along_and_the_next_run_cleans_up(reference_project: Path):
    rows = 1_500_000
    big = pa.table(
        {
            "sequenceId": np.repeat(np.arange(rows // 100), 100),
            "itemPosition": np.tile(np.arange(100), rows // 100),
            "event": pa.array(np.array(["a", "b", "c"])[np.arange(rows) % 3]),
            "amount": np.random.default_rng(0).normal(size=rows),
        }
    )
    pq.write_table(big, reference_project / "data" / "big.parquet")
    config = {"project_root": ".", "preprocessing_data_path": "data/big.parquet", "window_length": 8, "n_cores": 2}
    (reference_project / "configs" / "big.yaml").write_text(yaml.safe_dump(config))
    before = outputs(reference_project)
    run = subprocess.Popen(
        [sys.executable, "-m", "sequifier", "preprocess", "--config-path", "configs/big.yaml"],
        cwd=reference_project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[str] = []
    deadline = time.time() + 120
    while len(workers) < 2 and run.poll() is None and time.time() < deadline:
        workers = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True, text=True).stdout.split()
        time.sleep(0.02)
    assert len(workers) == 2, "the run ended before its workers were seen"
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_running(int(pid)) for pid in workers):
        time.sleep(0.05)
    assert not any(_running(int(pid)) for pid in workers)
    assert outputs(reference_project) == before
    assert hidden(reference_project)  # the killed run's staging is still there ...
    result = run_sequifier(["preprocess", "--config-path", CONFIG], reference_project)
    assert result.returncode == 0, result.stderr
    assert hidden(reference_project) == []  # ... until the next run


def _running(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        return stat.read_text().split()[2] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
