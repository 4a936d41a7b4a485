"""Where the threads of a CPU training pass spend their time: matrix products, other torch work, OpenMP waits, Python.

    .venv/bin/python bench/step_threads.py [--seconds 20] [--batch-size 16] [--context 128] [--autocast bf16]

The training step of `bench/profile_autocast.py` (seed-shaped model, forward, loss, backward, AdamW) on one pass
of `--batch-size` rows (16 x 128 = the 2,048 tokens of a `sequifier train` pass), with the heap kept as
`sequifier train` keeps it. After warm-up steps, Linux `perf record` samples this process's threads for
`--seconds` while it keeps stepping; each thread's samples are then grouped by what they ran. The main thread
runs the whole time, so its samples stand for the wall time and each row reads as a share of it. torch.profiler
cannot give this split: it times operators on the calling thread and counts neither the worker threads'
waiting nor the time between operators. Needs `perf` and a perf_event_paranoid setting that lets a process
sample itself (2 or lower).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from profile_autocast import training_step

from sequifier.training.heap import keep_freed_memory

CATEGORIES = ("matrix products", "other torch work", "OpenMP waits", "Python", "dropout masks (numpy)", "other")


def category(library: str, symbol: str) -> str:
    if "gemm" in symbol or symbol.startswith("mkl_blas") or "dnnl" in symbol or "brgemm" in symbol:
        return "matrix products"
    if "libgomp" in library or "libiomp" in library:
        return "OpenMP waits"
    if library.startswith(("libtorch_cpu", "libc10")):
        return "other torch work"
    if library.startswith("libpython") or library.startswith("python"):
        return "Python"
    if "sfc64" in library or library.startswith(("_common.", "bit_generator", "_multiarray_umath")):
        return "dropout masks (numpy)"
    return "other"


def sample(step, seconds: float, data: Path) -> tuple[int, float]:
    """Steps while `perf record` samples this process; the steps taken and the seconds they took."""
    recorder = subprocess.Popen(
        ["perf", "record", "-q", "-F", "1999", "-p", str(os.getpid()), "-o", str(data), "--", "sleep", str(seconds)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    steps, started = 0, time.perf_counter()
    while recorder.poll() is None:
        step()
        steps += 1
    elapsed = time.perf_counter() - started
    if recorder.returncode != 0:
        sys.exit(f"perf record failed ({recorder.returncode}): {recorder.stderr.read().strip()[-500:]}")
    return steps, elapsed


def samples_by_thread(data: Path) -> dict[str, collections.Counter]:
    """{thread: Counter(category: samples)} from `perf report`'s per-thread, per-symbol table."""
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "-g", "none",
         "--sort", "pid,dso,sym", "-F", "sample,pid,dso,sym"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    threads: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in report.splitlines():
        fields = line.split(None, 3)
        if len(fields) < 3 or line.startswith("#") or not fields[0].isdigit():
            continue
        count, thread, library = int(fields[0]), fields[1], fields[2]
        symbol = fields[3].split("] ", 1)[-1] if len(fields) > 3 else ""
        threads[thread][category(library, symbol)] += count
    return threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=10, help="steps before sampling")
    parser.add_argument("--autocast", choices=["bf16"], help="train under bf16 autocast (default float32)")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        sys.exit("this bench needs Linux perf (e.g. Debian's linux-perf package)")
    keep_freed_memory()
    args.dim, args.layers, args.ffn = 128, 2, 512
    autocast_step = training_step(args)

    def step() -> None:
        autocast_step(args.autocast == "bf16")

    for _ in range(args.warmup):
        step()
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "perf.data"
        steps, elapsed = sample(step, args.seconds, data)
        threads = samples_by_thread(data)
    main_thread = max(threads, key=lambda t: (t.endswith(f"{os.getpid()}:python"), sum(threads[t].values())))
    wall = sum(threads[main_thread].values())
    print(
        f"{steps} steps of {args.batch_size} x {args.context} tokens in {elapsed:.1f} s: "
        f"{1000 * elapsed / steps:.1f} ms a step, {torch.get_num_threads()} torch threads, "
        f"{'bf16 autocast' if args.autocast else 'float32'}"
    )
    print("shares of the wall time (the main thread's samples), by thread and by what it ran")
    print(f"{'thread':>18} {'busy':>6} " + " ".join(f"{c:>{max(len(c), 6)}}" for c in CATEGORIES))
    ordered = [main_thread] + sorted((t for t in threads if t != main_thread), key=lambda t: -sum(threads[t].values()))
    for thread in ordered:
        counts = threads[thread]
        if sum(counts.values()) < 0.01 * wall:
            continue
        label = "main " + thread.split(":")[0] if thread == main_thread else "worker " + thread.split(":")[0]
        cells = " ".join(f"{100 * counts[c] / wall:>{max(len(c), 6)}.1f}" for c in CATEGORIES)
        print(f"{label:>18} {100 * sum(counts.values()) / wall:>6.1f} {cells}")


if __name__ == "__main__":
    main()
