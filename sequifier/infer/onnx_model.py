"""An exported ONNX model with its embedded contract, run through ONNX Runtime."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from sequifier.config.errors import UserError
from sequifier.export.contract import CONTRACT_KEY, decode


def _providers(device: str) -> list[str]:
    """ONNX Runtime execution providers for `device`, or a UserError when this installation has none for it."""
    if device == "cpu":
        return ["CPUExecutionProvider"]
    available = ort.get_available_providers()
    if device == "cuda" and "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if device == "cuda":
        raise UserError(
            "device",
            f"is 'cuda', but this onnxruntime offers only {', '.join(available)}; "
            "install onnxruntime-gpu, use a PT bundle, or set device: cpu",
        )
    raise UserError("device", f"is {device!r}, but ONNX models run on cpu or cuda; use a PT bundle for {device!r}")


class OnnxModel:
    """Feeds named column arrays and padding lengths; returns one array per output (target, or "embedding").

    ONNX Runtime's EliminateDropout optimization is off, so a graph exported with dropout keeps its
    Dropout nodes (graphs exported without dropout have none). Without dropout, each call runs on
    one thread and `concurrency` calls run side by side (robust to other load on the cores; no
    per-operator synchronization); with dropout, calls run one after another on all cores, so that
    a seed gives the same masks. On `device: cuda` (CUDAExecutionProvider) calls run one after another.
    """

    def __init__(self, path: Path, device: str = "cpu"):
        if not path.is_file():
            raise UserError(str(path), "model file does not exist")
        self.providers = _providers(device)
        self.session = self._session(path, 1)
        metadata = self.session.get_modelmeta().custom_metadata_map
        if CONTRACT_KEY not in metadata:
            raise UserError(str(path), "is not a sequifier model (no execution contract in its metadata)")
        self.contract: dict[str, Any] = decode(metadata[CONTRACT_KEY])
        self.concurrency = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if self.contract["dropout"] == "active" or device == "cuda":  # one masks stream / one device: batches in order
            self.session = self._session(path, 0)
            self.concurrency = 1
        self.keys = list(self.contract["outputs"])
        self.names = [self.contract["outputs"][k] for k in self.keys]

    def _session(self, path: Path, threads: int) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        try:
            return ort.InferenceSession(
                str(path), options, providers=self.providers, disabled_optimizers=["EliminateDropout"]
            )
        except Exception as error:  # onnxruntime raises its own exception types
            raise UserError(str(path), f"not a readable ONNX model ({' '.join(str(error).split())[:200]})") from None

    def reseed(self, seed: int) -> None:
        """Start ONNX Runtime's dropout masks (process-wide) from `seed`."""
        ort.set_seed(seed)

    def __call__(self, inputs: dict[str, np.ndarray], left_pad_lengths: np.ndarray) -> dict[str, np.ndarray]:
        feed = {name: inputs[name] for name in self.contract["input_columns"]}
        feed[self.contract["pad_input"]] = left_pad_lengths.astype(np.int64)
        return dict(zip(self.keys, self.session.run(self.names, feed)))
