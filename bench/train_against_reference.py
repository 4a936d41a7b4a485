"""Whole-process `sequifier train` against the established release 3.1.1.0: wall time and peak RSS, same pt data.

    .venv/bin/python bench/train_against_reference.py [--windows 4000] [--epochs 1 5] [--repeats 2] [--dropout 0.1]
        [--reference-venv /tmp/ref] [--tools 3.x ours] [--override KEY=VALUE ...] [--workdir DIR]
        [--variant LABEL SETTING ... [--variant ...]]

The reference release lives in its own venv and is never a dependency of this project; create it with
    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install torch==2.13.0 sequifier==3.1.1.0
Fresh synthetic data (a 24-event Markov chain with an event-dependent real `amount`, sequences of 1,000 items)
is preprocessed once by this project into pt shards of 129-item windows (context 128), about `--windows` of
them in the training split. Both tools then train the same config on that folder: the seed-shaped model (dim
128, 2 layers, 8 heads, SwiGLU 512, RoPE, dropout 0.1 as in the guide's examples, context 128, batch 64, AdamW,
every position trained), from process start to the exported ONNX model, one run of each tool after the other,
`--repeats` times. Each run is a fresh child of a small wrapper interpreter, so its peak RSS is the training
process's own (getrusage of the wrapper's children). `--override` passes extra config overrides to this
project's runs only (e.g. global_training.autocast=bf16). Each `--variant` adds a run of this project's to
every repeat, alternating with the others: its settings are config overrides (key=value) and, for upper-case
names, environment variables (e.g. `--variant plain-heap GLIBC_TUNABLES=glibc.malloc.arena_max=16`).
This project's runs use .venv/bin/sequifier, or the executable that SEQUIFIER_COMMAND names (as
bench/gpu_session.sh does on a machine without the venv); the scripts that import this one do the same.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import compare_reference
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

OURS = Path(os.environ.get("SEQUIFIER_COMMAND", Path(__file__).resolve().parents[1] / ".venv" / "bin" / "sequifier"))
N_EVENTS = 24
SEQUENCE_LENGTH = 1000
CONTEXT = 128
WINDOWS_PER_SEQUENCE = 7  # training windows of one sequence: 80% of 1,000 items in 128-item strides

MEASURE = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - started
print(json.dumps({"rc": done.returncode, "wall": wall, "stderr": done.stderr[-3000:],
                  "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def write_events(sequences: int, path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    transitions = rng.dirichlet(np.full(N_EVENTS, 0.3), size=N_EVENTS)
    cumulative = np.cumsum(transitions, axis=1)
    events = np.empty((sequences, SEQUENCE_LENGTH), dtype=np.int64)
    events[:, 0] = rng.integers(0, N_EVENTS, sequences)
    draws = rng.random((sequences, SEQUENCE_LENGTH))
    for position in range(1, SEQUENCE_LENGTH):
        rows = cumulative[events[:, position - 1]]
        events[:, position] = np.minimum((rows < draws[:, position, None]).sum(axis=1), N_EVENTS - 1)
    flat = events.ravel()
    amount_means = rng.uniform(-5.0, 20.0, N_EVENTS)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "sequenceId": np.repeat(np.arange(sequences), SEQUENCE_LENGTH),
                "itemPosition": np.tile(np.arange(SEQUENCE_LENGTH), sequences),
                "event": [f"ev{e:02d}" for e in flat],
                "amount": amount_means[flat] + rng.normal(0.0, 2.0, len(flat)),
            }
        ),
        path,
    )


def preprocess_config() -> dict:
    return {
        "project_root": ".",
        "preprocessing_data_path": "data/events.parquet",
        "read_format": "parquet",
        "write_format": "pt",
        "merge_output": False,
        "selected_columns": ["event", "amount"],
        "split_ratios": [0.8, 0.1, 0.1],
        "window_length": CONTEXT + 1,
        "window_stride": CONTEXT,
        "max_target_offset": 1,
        "seed": 1010,
        "n_cores": 2,
        "batches_per_file": 256,
    }


def train_config(epochs: int, dropout: float) -> dict:
    """compare_reference's config (fields that mean the same in both tools), grown to the seed-shaped model on pt."""
    config = compare_reference.train_config(CONTEXT, CONTEXT, epochs, seed=0)
    config["model_name"] = "speed"
    config["global_training"].update(read_format="pt", batch_size=64, learning_rate=0.001)
    config["model"]["backbone"]["architecture"].update(
        dim_model=128,
        attention={"type": "mha", "n_heads": 8, "n_kv_heads": 8, "output_projection": True},
        feed_forward={"dim": 512, "activation": "swiglu"},
        dropout=dropout,
    )
    config["model"]["interface"]["ingestion"].update(output_dim=128, feature_embedding_dims={"event": 96, "amount": 32})
    return config


def write_yaml(path: Path, config: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def measured(command: list[str], project: Path, environment: dict[str, str] | None = None) -> dict:
    wrapper = subprocess.run(
        [sys.executable, "-c", MEASURE, *command],
        cwd=project,
        capture_output=True,
        text=True,
        env=os.environ | (environment or {}),
    )
    result = json.loads(wrapper.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(command)} failed in {project}:\n{result['stderr']}")
    return {"wall": result["wall"], "rss_mib": result["max_rss_kib"] / 1024}


def prepare_data(workdir: Path, windows: int) -> Path:
    project = workdir / "data-project"
    write_events(max(1, round(windows / WINDOWS_PER_SEQUENCE)), project / "data" / "events.parquet")
    write_yaml(project / "configs" / "preprocess.yaml", preprocess_config())
    measured([str(OURS), "preprocess", "--config-path", "configs/preprocess.yaml"], project)
    metadata = json.loads((project / "data" / "events-split0" / "metadata.json").read_text())
    print(f"training split: {metadata['total_samples']} windows of {CONTEXT + 1} items in pt shards")
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-venv", type=Path, default=Path("/tmp/ref"))
    parser.add_argument("--windows", type=int, default=4000, help="about this many training windows")
    parser.add_argument("--epochs", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1, help="architecture.dropout of both tools")
    parser.add_argument("--tools", nargs="+", choices=["3.x", "ours"], default=["3.x", "ours"])
    parser.add_argument("--override", nargs="*", default=[], help="config overrides for this project's runs")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--variant",
        nargs="+",
        action="append",
        default=[],
        metavar="LABEL SETTING",
        help="another run of this project's: a label, then key=value overrides and NAME=value environment variables",
    )
    args = parser.parse_args()
    executables = {"3.x": args.reference_venv / "bin" / "sequifier", "ours": OURS}
    if "3.x" in args.tools and not executables["3.x"].exists():
        parser.error(f"{executables['3.x']} does not exist; --help says how to create the reference venv")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sequifier-speed-"))
    project = prepare_data(workdir, args.windows)
    runners = {
        tool: ([str(executables[tool]), "train", "--config-path", "configs/train.yaml"], {}) for tool in args.tools
    }
    if "ours" in runners:
        runners["ours"][0].extend(args.override)
    for label, *settings in args.variant:
        environment = {k: v for k, _, v in (s.partition("=") for s in settings) if k.isupper()}
        overrides = [s for s in settings if not s.partition("=")[0].isupper()]
        runners[label] = ([str(OURS), "train", "--config-path", "configs/train.yaml", *overrides], environment)
    print(f"{'epochs':>6} {'run':>3} " + " ".join(f"{t + ' s':>9} {t + ' MiB':>9}" for t in runners))
    for epochs in args.epochs:
        write_yaml(project / "configs" / "train.yaml", train_config(epochs, args.dropout))
        runs = []
        for repeat in range(args.repeats):
            row = {label: measured(command, project, environment) for label, (command, environment) in runners.items()}
            runs.append(row)
            print(
                f"{epochs:>6} {repeat + 1:>3} "
                + " ".join(f"{row[t]['wall']:>9.1f} {row[t]['rss_mib']:>9.0f}" for t in runners)
            )
        if set(args.tools) == {"3.x", "ours"}:
            wall = [r["3.x"]["wall"] / r["ours"]["wall"] for r in runs]
            rss = [r["ours"]["rss_mib"] / r["3.x"]["rss_mib"] for r in runs]
            print(
                f"{epochs} epochs: ours {min(wall):.2f}-{max(wall):.2f}x faster, "
                f"at {min(rss):.2f}-{max(rss):.2f}x the peak RSS"
            )


if __name__ == "__main__":
    main()
