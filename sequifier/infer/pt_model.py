"""A PT inference bundle, rebuilt into the network and run through the same inference graph ONNX exports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from sequifier.config.errors import UserError, absent_file
from sequifier.export.bundle import read_bundle
from sequifier.export.contract import graph_inputs
from sequifier.export.graph import InferenceGraph


def torch_device(device: str) -> torch.device:
    """`device` as torch sees it, or a UserError when this machine has no such device."""
    kind, _, index = device.partition(":")
    found = {
        "cpu": True,
        "cuda": torch.cuda.device_count() > int(index or 0),
        "mps": torch.backends.mps.is_available(),
    }[kind]
    if not found:
        raise UserError(
            "device", f"is {device!r}, but torch {torch.__version__} finds no {device} device here; set device: cpu"
        )
    return torch.device(device)


class PtModel:
    """Same call as OnnxModel; `model_type` picks the outputs, `with_dropout` keeps dropout active, on `device`.

    `interface` chooses what a run-wide bundle serves (None: its only interface).
    """

    def __init__(
        self,
        path: Path,
        model_type: str,
        with_dropout: bool = False,
        device: str = "cpu",
        interface: str | None = None,
    ):
        if not path.is_file():
            raise UserError(str(path), f"model file {absent_file(path)}")
        self.path = path
        self.device = torch_device(device)
        network, contract, self.export_metadata = read_bundle(path, interface)
        self.contract: dict[str, Any] = contract
        columns = (graph_inputs(contract), contract["target_columns"])
        self.graph = InferenceGraph(network, contract["interface"], *columns, model_type)
        self.graph.train(with_dropout).to(self.device)
        self.keys = ["embedding"] if model_type == "embedding" else list(contract["target_columns"])
        self.concurrency = 1  # torch parallelizes inside each operator

    def reseed(self, seed: int) -> None:
        """Start torch's dropout masks (process-wide, every device) from `seed`."""
        torch.manual_seed(seed)

    def __call__(self, inputs: dict[str, np.ndarray], left_pad_lengths: np.ndarray) -> dict[str, np.ndarray]:
        tensors = [torch.from_numpy(inputs[name]).to(self.device) for name in graph_inputs(self.contract)]
        padding = torch.from_numpy(left_pad_lengths.astype(np.int64)).to(self.device)
        with torch.inference_mode():
            outputs = self.graph(*tensors, padding)
        return {key: out.cpu().numpy() for key, out in zip(self.keys, outputs)}
