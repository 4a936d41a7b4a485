"""Which artifacts a run exports, and their file names under models/."""

from __future__ import annotations

from pathlib import Path

from sequifier.config.resolve import RunSpec
from sequifier.export.onnx import export_onnx
from sequifier.model.network import SequifierNetwork


def export_models(network: SequifierNetwork, spec: RunSpec, kind: str, epoch: int) -> list[Path]:
    """Export `network` as the run's `kind` ("best" or "last") model of `epoch`; returns the files written."""
    config = spec.config
    written = []
    if config.export_onnx and config.export_generative_model:
        path = spec.models_dir / f"{spec.model_name}-{kind}-{epoch}.onnx"
        export_onnx(network, spec, path)
        written.append(path)
    return written
