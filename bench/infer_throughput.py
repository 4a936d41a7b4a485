"""Inference throughput of the seed-shaped model, end to end: windows/s for ONNX and PT.

    .venv/bin/python bench/infer_throughput.py [--windows 10000] [--batch-size 16] [--write-format csv] [--repeats 3]

Builds a throwaway project (metadata, one stored split of `--windows` windows, the model
exported as ONNX and as a PT bundle with an untrained seed-shaped network: dim 128, 2 layers,
8 heads, feed-forward 512 SwiGLU, RoPE, context 128, one categorical column of 27 values),
then times `sequifier infer` (run_inference: loading the model, reading the split, predicting,
decoding and writing the predictions) `--repeats` times per artifact kind. On a shared machine
the best run is the one that had the cores to itself; the median and the CPU use (process CPU
seconds per wall second) of the best run are printed beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.data.stored_tables import write_split_parquet
from sequifier.data.stored_windows import StoredWindows
from sequifier.export.bundle import write_bundle
from sequifier.export.onnx import export_onnx
from sequifier.infer.runner import run_inference
from sequifier.model.network import build_network

N_VALUES = 24  # data values; ids 3..26 (27 classes with the reserved ids)


def write_project(root: Path, windows: int, context: int) -> None:
    """Metadata and one stored split of random windows (a tenth of them left-padded)."""
    rng = np.random.default_rng(0)
    width = context + 1
    id_map = {f"v{i:02d}": i + 3 for i in range(N_VALUES)} | {"[unknown]": 0, "[other]": 1}
    metadata = {
        "n_classes": {"event": N_VALUES + 3},
        "id_maps": {"event": id_map},
        "special_token_ids": {"[unknown]": 0, "[other]": 1, "[mask]": 2},
        "split_paths": ["data/bench-split0.parquet"],
        "column_data_types": {"event": "Int64"},
        "selected_columns_statistics": {},
        "normalize_real_columns": True,
        "window_length": width,
        "window_lengths": [width],
        "window_stride": width,
        "max_target_offset": 1,
    }
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "bench.json").write_text(json.dumps(metadata))
    values = rng.integers(3, N_VALUES + 3, (windows, width))
    padding = np.where(rng.random(windows) < 0.1, rng.integers(1, context // 2, windows), 0)
    values[np.arange(width)[None, :] < padding[:, None]] = 0
    sequence_ids = np.arange(windows, dtype=np.int64)
    starts = -padding.astype(np.int64)
    stored = StoredWindows(
        {"event": values.astype(np.float64)},
        sequence_ids,
        np.zeros(windows, np.int64),
        starts,
        padding.astype(np.int64),
        starts + padding,
        starts + width,
    )
    write_split_parquet(root / "data" / "bench-split0.parquet", stored, ["event"])


def export_models(root: Path, context: int, dim: int, layers: int, heads: int, ffn: int) -> None:
    config = {
        "model_name": "bench",
        "seed": 1,
        "global_training": {"context_length": context},
        "model": {
            "backbone": {
                "architecture": {
                    "dim_model": dim,
                    "num_layers": layers,
                    "attention": {"type": "mha", "n_heads": heads},
                    "feed_forward": {"dim": ffn, "activation": "swiglu"},
                    "position_encoding": {"type": "rope"},
                    "dropout": 0.1,
                }
            },
            "interface": {"input_columns": ["event"], "target_columns": ["event"], "ingestion": {"type": "embedding"}},
        },
        "dataset": {"part": {"metadata_config_path": "configs/bench.json"}, "criterion": {"event": "CrossEntropyLoss"}},
        "training_plan": {"epochs": 1},
    }
    spec = resolve(canonical_config(config), run_dir=root, cwd=root)
    torch.manual_seed(0)
    network = build_network(spec.network).eval()
    export_onnx(network, spec, root / "models" / "bench-last-1.onnx")
    write_bundle(network, spec, root / "models" / "bench-last-1.pt", "last", 1)


def time_inference(root: Path, model: str, batch_size: int, write_format: str, device: str) -> tuple[float, float]:
    """Wall seconds and process CPU seconds of one end-to-end infer run."""
    config = {
        "model_path": f"models/{model}",
        "device": device,
        "data_path": "data/bench-split0.parquet",
        "inference_batch_size": batch_size,
        "write_format": write_format,
    }
    path = root / "configs" / f"infer-{model}.yaml"
    path.write_text(yaml.safe_dump(config))
    started, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        run_inference(path)
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--write-format", default="csv", choices=("csv", "parquet"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=512)
    parser.add_argument("--pt-device", default="cpu", help="where the PT bundle runs (ONNX runs on the CPU)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_project(root, args.windows, args.context)
        export_models(root, args.context, args.dim, args.layers, args.heads, args.ffn)
        cwd = Path.cwd()
        os.chdir(root)
        try:
            print(
                f"model: dim {args.dim}, {args.layers} layers, {args.heads} heads, ffn {args.ffn} swiglu, "
                f"ctx {args.context}; {args.windows} windows, batch {args.batch_size}, {args.write_format} output, "
                f"{torch.get_num_threads()} torch threads, {os.cpu_count()} cores"
            )
            for model in ("bench-last-1.onnx", "bench-last-1.pt"):
                device = args.pt_device if model.endswith(".pt") else "cpu"
                runs = sorted(
                    time_inference(root, model, args.batch_size, args.write_format, device) for _ in range(args.repeats)
                )
                best, cpu = runs[0]
                median = runs[len(runs) // 2][0]
                print(
                    f"{Path(model).suffix[1:].upper():>4} on {device}: {args.windows / best:,.0f} windows/s "
                    f"best of {args.repeats} "
                    f"({best:.2f} s end to end, CPU use {cpu / best:.2f}); "
                    f"median {args.windows / median:,.0f} windows/s"
                )
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    main()
