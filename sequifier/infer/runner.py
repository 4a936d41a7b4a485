"""Inference over stored windows: the last context of each window predicts the items that follow it."""

from __future__ import annotations

import glob
import logging
import os
import time
from pathlib import Path

import numpy as np

from sequifier.config.errors import UserError
from sequifier.config.infer import InferConfig, load_infer_config
from sequifier.data.metadata import read_metadata
from sequifier.data.stored import load_split
from sequifier.infer.onnx_model import OnnxModel
from sequifier.infer.outputs import decode_predictions, write_predictions

logger = logging.getLogger("sequifier")


def resolve_model_path(project_root: Path, pattern: str) -> Path:
    """The model file, or the newest file matching a glob pattern."""
    full = str(project_root / pattern)
    if not glob.has_magic(full):
        return Path(full)
    matches = sorted(glob.glob(full), key=os.path.getmtime)
    if not matches:
        raise UserError("model_path", f"no model file matches {full}; train a model first")
    return Path(matches[-1])


def resolve_data_path(project_root: Path, config: InferConfig) -> Path:
    if config.data_path:
        return project_root / config.data_path
    metadata = read_metadata(project_root / config.metadata_config_path)
    return project_root / metadata.split_paths[-1]


def model_inputs(columns: dict[str, np.ndarray], left_pad: np.ndarray, contract: dict) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The last context_length slots of every window, typed as the model expects, and their padding."""
    context = contract["context_length"]
    width = next(iter(columns.values())).shape[1]
    if width < context:
        raise UserError("data_path", f"stored windows hold {width} items, fewer than the model's context_length {context}")
    inputs = {}
    for name in contract["input_columns"]:
        values = columns[name][:, width - context:]
        kind = contract["columns"][name]["kind"]
        inputs[name] = np.ascontiguousarray(values.astype(np.int64 if kind == "categorical" else np.float32))
    padding = np.clip(left_pad - (width - context), 0, None)
    return inputs, padding


def run_inference(config_path: Path, data_path: str | None = None, model_path: str | None = None) -> Path:
    """Run the configured model over the configured split and write predictions; returns the output file."""
    config = load_infer_config(config_path, data_path=data_path, model_path=model_path)
    project_root = (Path.cwd() / config.project_root).resolve()
    model_file = resolve_model_path(project_root, config.model_path)
    model = OnnxModel(model_file)
    contract = model.contract
    split_path = resolve_data_path(project_root, config)
    categorical = {n for n, c in contract["columns"].items() if c["kind"] == "categorical"}
    stored = load_split(split_path, contract["input_columns"], categorical)
    started = time.perf_counter()
    inputs, padding = model_inputs(stored.columns, stored.left_pad_lengths, contract)
    batches = []
    for start in range(0, len(padding), config.inference_batch_size):
        part = slice(start, start + config.inference_batch_size)
        batches.append(model({k: v[part] for k, v in inputs.items()}, padding[part]))
    outputs = {t: np.concatenate([b[t] for b in batches]) for t in contract["target_columns"]} if batches else {}
    table = decode_predictions(outputs, stored, contract)
    destination = project_root / "outputs" / "predictions" / model_file.stem / f"part-000.{config.write_format}"
    write_predictions(table, destination, config.write_format)
    elapsed = time.perf_counter() - started
    print(f"wrote {len(padding)} windows' predictions to {destination} ({len(padding) / max(elapsed, 1e-9):.0f} windows/s)")
    return destination
