"""Preprocess throughput and peak memory per output form, on generated inputs of 1M and 4M rows.

    .venv/bin/python bench/preprocess_throughput.py [--rows 1000000 4000000] [--n-cores 2] [--input parquet|csv]

Each input has ~200 items per sequence, 2 categorical columns (a string and an integer code)
and 2 real columns, sorted by (sequenceId, itemPosition) as exports usually are (--shuffled
shuffles the rows). Every run is `sequifier preprocess` in a fresh child process, so wall
time includes interpreter start-up and imports. Peak RSS is reported twice: the largest
single process (getrusage(RUSAGE_CHILDREN) in a small wrapper process) and the largest
sum over the process tree (sampled from /proc every 20 ms; forked workers share pages with
their parent, so this sum overstates the memory in use).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq
import yaml

FORMS = {
    "parquet-merged": {"write_format": "parquet", "merge_output": True},
    "parquet-shards": {"write_format": "parquet", "merge_output": False},
    "pt-shards": {"write_format": "pt", "merge_output": False},
}
ITEMS_PER_SEQUENCE = 200


def make_input(rows: int, path: Path, shuffled: bool, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    n_sequences = max(1, rows // ITEMS_PER_SEQUENCE)
    lengths = rng.integers(ITEMS_PER_SEQUENCE // 2, ITEMS_PER_SEQUENCE * 3 // 2 + 1, size=n_sequences)
    lengths = np.maximum(1, np.round(lengths * rows / lengths.sum()).astype(np.int64))
    lengths[-1] += rows - lengths.sum()
    sequence_ids = np.repeat(np.arange(n_sequences, dtype=np.int64), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    events = np.array([f"e{i:02d}" for i in range(20)])
    table = pa.table(
        {
            "sequenceId": sequence_ids,
            "itemPosition": np.arange(rows, dtype=np.int64) - starts,
            "event": pa.array(events[rng.integers(0, 20, size=rows)]),
            "channel": rng.integers(0, 5, size=rows),
            "amount": rng.gamma(2.0, 15.0, size=rows),
            "delay": rng.exponential(1.5, size=rows),
        }
    )
    if shuffled:
        table = table.take(pa.array(rng.permutation(rows)))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        pv.write_csv(table, path)
    else:
        pq.write_table(table, path)


def _tree_rss_kib(root: int) -> int:
    """Sum of VmRSS over `root` and its descendants (0 for processes that are gone)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        pid, parent = int(entry), int(fields.get("PPid", "0").strip())
        children.setdefault(parent, []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


# Runs the command in a small interpreter of its own, so that the peak RSS of its children is
# the preprocess run's alone (a child forked from this big process would inherit its peak).
MEASURE = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - started
print(json.dumps({"rc": done.returncode, "wall": wall, "stderr": done.stderr[-4000:],
                  "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def run_measured(project: Path) -> dict:
    """One `sequifier preprocess` run in a fresh child: wall time, largest process RSS, sampled tree RSS."""
    command = [sys.executable, "-m", "sequifier", "preprocess", "--config-path", "configs/preprocess.yaml"]
    wrapper = subprocess.Popen(
        [sys.executable, "-c", MEASURE, *command], cwd=project, stdout=subprocess.PIPE, text=True
    )
    tree_peak = 0
    while wrapper.poll() is None:
        tree_peak = max(tree_peak, _tree_rss_kib(wrapper.pid))
        time.sleep(0.02)
    result = json.loads(wrapper.stdout.read())
    if result["rc"] != 0:
        raise SystemExit(f"preprocess failed:\n{result['stderr']}")
    return {"wall": result["wall"], "max_rss_mib": result["max_rss_kib"] / 1024, "tree_peak_mib": tree_peak / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--forms", nargs="+", choices=list(FORMS), default=list(FORMS))
    parser.add_argument("--n-cores", type=int, default=2)
    parser.add_argument("--input", choices=["parquet", "csv"], default="parquet")
    parser.add_argument("--shuffled", action="store_true", help="shuffle the input rows")
    parser.add_argument("--window-length", type=int, default=48)
    parser.add_argument("--window-stride", type=int, default=32)
    args = parser.parse_args()
    print(f"{'rows':>9}  {'form':<15} {'wall s':>7} {'rows/s':>11} {'max RSS MiB':>11} {'tree RSS MiB':>12}")
    with tempfile.TemporaryDirectory(prefix="preprocess-bench-") as scratch:
        for rows in args.rows:
            project = Path(scratch) / f"rows-{rows}"
            make_input(rows, project / "data" / f"events.{args.input}", args.shuffled)
            for form in args.forms:
                config = {
                    "project_root": ".",
                    "preprocessing_data_path": f"data/events.{args.input}",
                    "selected_columns": ["event", "channel", "amount", "delay"],
                    "split_ratios": [0.8, 0.1, 0.1],
                    "window_length": args.window_length,
                    "window_stride": args.window_stride,
                    "n_cores": args.n_cores,
                    **FORMS[form],
                }
                (project / "configs").mkdir(parents=True, exist_ok=True)
                (project / "configs" / "preprocess.yaml").write_text(yaml.safe_dump(config))
                result = run_measured(project)
                print(
                    f"{rows:>9,}  {form:<15} {result['wall']:>7.2f} {rows / result['wall']:>11,.0f} "
                    f"{result['max_rss_mib']:>11.0f} {result['tree_peak_mib']:>12.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
