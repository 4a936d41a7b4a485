"""An exported ONNX model with its embedded contract, run through ONNX Runtime."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from sequifier.config.errors import UserError, absent_file
from sequifier.config.network import depth_mask_input
from sequifier.export.contract import CONTRACT_KEY, decode, graph_inputs
from sequifier.export.graph_digest import GRAPH_DIGEST_KEY, MalformedModel, file_graph_digest


def _providers(device: str) -> list:
    """ONNX Runtime execution providers for `device`, or a UserError when this installation has none for it."""
    if device == "cpu":
        return ["CPUExecutionProvider"]
    available = ort.get_available_providers()
    kind, _, index = device.partition(":")
    if kind == "cuda" and "CUDAExecutionProvider" in available:
        return [("CUDAExecutionProvider", {"device_id": int(index or 0)}), "CPUExecutionProvider"]
    if kind == "cuda":
        raise UserError(
            "device",
            f"is {device!r}, but this onnxruntime offers only {', '.join(available)}; "
            "install onnxruntime-gpu, use a PT bundle, or set device: cpu",
        )
    raise UserError(
        "device", f"is {device!r}, but ONNX models run on cpu or cuda (cuda:N); use a PT bundle for {device!r}"
    )


INPUT_TYPES = {"categorical": "tensor(int64)", "real": "tensor(float)"}


def _check_graph_digest(path: Path, recorded: str | None) -> None:
    """The graph's bytes are the ones exported; models exported before digests were recorded are not checked."""
    if recorded is None:
        return
    if re.fullmatch(r"[0-9a-f]{64}", recorded) is None:
        raise UserError(
            str(path), f"is damaged: its {GRAPH_DIGEST_KEY!r} metadata entry is not a SHA-256 digest (64 hex digits)"
        )
    try:
        found = file_graph_digest(path)
    except (MalformedModel, OSError, ValueError) as error:
        raise UserError(str(path), f"is damaged: {error}") from None
    if found != recorded:
        raise UserError(
            str(path),
            "is damaged: its graph (nodes and weights) is not the one exported, its SHA-256 differs from the digest "
            "recorded at export; export the model again, or, for a model changed on purpose (quantized, optimized), "
            f"delete its {GRAPH_DIGEST_KEY!r} metadata entry",
        )


def _check_graph(session: ort.InferenceSession, contract: dict[str, Any], path: Path) -> None:
    """The graph's inputs and outputs are the ones its contract names, with the types inference feeds."""
    wanted = {name: INPUT_TYPES[contract["columns"][name]["kind"]] for name in contract["input_columns"]}
    wanted.update({depth_mask_input(layout): "tensor(bool)" for layout in contract.get("depth_layouts", {})})
    wanted[contract["pad_input"]] = "tensor(int64)"
    found = {value.name: value.type for value in session.get_inputs()}
    if found != wanted:
        raise UserError(
            str(path), f"the graph's inputs {found} are not the ones its execution contract describes {wanted}"
        )
    for value in session.get_inputs():
        length = value.shape[1] if value.name in contract["input_columns"] and len(value.shape) > 1 else None
        if isinstance(length, int) and length != contract["context_length"]:
            raise UserError(
                str(path),
                f"the graph reads {length} items of {value.name!r}, but its execution contract gives context_length "
                f"{contract['context_length']}",
            )
    outputs = {value.name: value.shape for value in session.get_outputs()}
    for key, name in contract["outputs"].items():
        if name not in outputs:
            raise UserError(str(path), f"the graph has no output {name!r}, which its execution contract names")
        classes = len(contract["class_ids"].get(key, ()))
        last = outputs[name][-1] if outputs[name] else None
        if classes and isinstance(last, int) and last != classes:
            raise UserError(str(path), f"output {name!r} has {last} logits, but class_ids.{key} lists {classes}")


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
            raise UserError(str(path), f"model file {absent_file(path)}")
        self.path = path
        self.providers = _providers(device)
        self.session = self._session(path, 1)
        try:
            metadata = self.session.get_modelmeta().custom_metadata_map
        except UnicodeDecodeError:
            raise UserError(str(path), "is damaged: its metadata is not UTF-8 text") from None
        if CONTRACT_KEY not in metadata:
            raise UserError(str(path), "is not a sequifier model (no execution contract in its metadata)")
        self.contract: dict[str, Any] = decode(metadata[CONTRACT_KEY], str(path))
        _check_graph_digest(path, metadata.get(GRAPH_DIGEST_KEY))
        _check_graph(self.session, self.contract, path)
        self.concurrency = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        # one masks stream, or one device: batches in order
        if self.contract["dropout"] == "active" or device.startswith("cuda"):
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
        feed = {name: inputs[name] for name in graph_inputs(self.contract)}
        feed[self.contract["pad_input"]] = left_pad_lengths.astype(np.int64)
        return dict(zip(self.keys, self.session.run(self.names, feed)))
