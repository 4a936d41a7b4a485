"""Whole-process profile of `sequifier train --profile` on the data and config of bench/train_against_reference.py.

    .venv/bin/python bench/train_profile.py [--windows 4000] [--epochs 1] [--dropout 0.1]
        [--override KEY=VALUE ...] [--workdir DIR]

Preprocesses the same synthetic pt data (about `--windows` training windows of 129 items) and trains the same
seed-shaped model once, in a fresh process, with `--profile`: it prints the run summary and the profile table
(wall time per phase from process start, step parts, RSS) and writes logs/speed/profile.json. This script adds
the wall time and peak RSS it measured around that process, so the profile's total can be checked against them.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from train_against_reference import OURS, prepare_data, train_config, write_yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", type=int, default=4000, help="about this many training windows")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.1, help="architecture.dropout")
    parser.add_argument("--override", nargs="*", default=[], help="extra config overrides (KEY=VALUE)")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sequifier-profile-"))
    project = prepare_data(workdir, args.windows)
    write_yaml(project / "configs" / "train.yaml", train_config(args.epochs, args.dropout))
    command = [str(OURS), "train", "--config-path", "configs/train.yaml", "--profile", *args.override]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {project}:\n{done.stderr[-3000:]}")
    print(done.stdout.strip())
    profile = json.loads((project / "logs" / "speed" / "profile.json").read_text())
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(
        f"\nmeasured around the process: wall {wall:.2f} s (the profile's total: {profile['total_seconds']:.2f} s), "
        f"peak RSS of the largest child {peak_kib / 1024:.0f} MiB; project {project}"
    )


if __name__ == "__main__":
    main()
