"""A PT inference bundle, rebuilt into the network and run through the same inference graph ONNX exports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from sequifier.config.errors import UserError
from sequifier.export.bundle import read_bundle
from sequifier.export.graph import InferenceGraph


class PtModel:
    """Same call as OnnxModel; `model_type` picks the outputs, `with_dropout` keeps dropout active."""

    def __init__(self, path: Path, model_type: str, with_dropout: bool = False):
        if not path.is_file():
            raise UserError(str(path), "model file does not exist")
        network, contract, self.export_metadata = read_bundle(path)
        self.contract: dict[str, Any] = contract
        self.graph = InferenceGraph(network, contract["interface"], contract["input_columns"], contract["target_columns"], model_type)
        self.graph.train(with_dropout)
        self.keys = ["embedding"] if model_type == "embedding" else list(contract["target_columns"])
        self.concurrency = 1  # torch parallelizes inside each operator

    def reseed(self, seed: int) -> None:
        """Start torch's dropout masks (process-wide) from `seed`."""
        torch.manual_seed(seed)

    def __call__(self, inputs: dict[str, np.ndarray], left_pad_lengths: np.ndarray) -> dict[str, np.ndarray]:
        tensors = [torch.from_numpy(inputs[name]) for name in self.contract["input_columns"]]
        with torch.inference_mode():
            outputs = self.graph(*tensors, torch.from_numpy(left_pad_lengths.astype(np.int64)))
        return {key: out.numpy() for key, out in zip(self.keys, outputs)}
