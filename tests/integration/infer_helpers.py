"""Helpers of the infer integration tests (no tests here).

Tiny models exported from one network, and running infer in-process.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import torch
from conftest import REFERENCE_DIR, tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import RunSpec, resolve
from sequifier.export.bundle import write_bundle
from sequifier.export.onnx import export_onnx
from sequifier.infer.runner import run_inference
from sequifier.model.network import build_network

METADATA = REFERENCE_DIR / "configs" / "metadata_configs" / "events.json"
SPLIT = REFERENCE_DIR / "data" / "events-split2.parquet"
GENERATIVE, EMBEDDING, DROPOUT, BUNDLE = (
    "tiny-last-1.onnx",
    "tiny-embedding-last-1.onnx",
    "tiny-dropout-last-1.onnx",
    "tiny-last-1.pt",
)


def tiny_spec(
    project: Path, interface: dict | None = None, architecture: dict | None = None, training: dict | None = None
) -> RunSpec:
    config = tiny_train_config(project_root=str(project))
    config["global_training"].update(training or {})
    config["model"]["interface"].update(interface or {})
    config["model"]["backbone"]["architecture"].update({"num_layers": 2, **(architecture or {})})
    config["dataset"]["part"]["metadata_config_path"] = str(METADATA)
    if interface and "target_columns" in interface:
        config["dataset"]["criterion"] = {
            t: ("MSELoss" if t in ("amount", "delay") else "CrossEntropyLoss") for t in interface["target_columns"]
        }
    return resolve(canonical_config(config), run_dir=project, cwd=REFERENCE_DIR)


def export_all(
    project: Path, interface: dict | None = None, architecture: dict | None = None, training: dict | None = None
) -> RunSpec:
    """One untrained tiny network, exported as generative, embedding and dropout ONNX and a PT bundle under models/."""
    spec = tiny_spec(project, interface, architecture, training)
    torch.manual_seed(0)
    network = build_network(spec.network).eval()
    models = project / "models"
    export_onnx(network, spec, models / GENERATIVE)
    export_onnx(network, spec, models / EMBEDDING, "embedding")
    export_onnx(network, spec, models / DROPOUT, with_dropout=True)
    write_bundle(network, spec, models / BUNDLE, "last", 1)
    return spec


def infer(project: Path, model: str, data_path: Path = SPLIT, **fields) -> list[Path]:
    """Run `sequifier infer` in-process with an infer.yaml of `fields`; returns the files written."""
    config = {"project_root": str(project), "model_path": f"models/{model}", "data_path": str(data_path), **fields}
    with contextlib.redirect_stdout(io.StringIO()):
        return run_inference(write_yaml(project / "configs" / "infer.yaml", config))


def read_table(path: Path) -> pa.Table:
    return pacsv.read_csv(path) if path.suffix == ".csv" else pq.read_table(path)


def outputs(project: Path, kind: str, model: str, target: str = "") -> pa.Table:
    folder = project / "outputs" / kind / Path(model).stem / target
    return pa.concat_tables([read_table(p) for p in sorted(folder.glob("part-*"))])
