"""An exported ONNX model with its embedded contract, run through ONNX Runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from sequifier.config.errors import UserError
from sequifier.export.contract import CONTRACT_KEY, decode


class OnnxModel:
    """Feeds named column arrays and padding lengths; returns one array per target."""

    def __init__(self, path: Path):
        if not path.is_file():
            raise UserError(str(path), "model file does not exist")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        metadata = self.session.get_modelmeta().custom_metadata_map
        if CONTRACT_KEY not in metadata:
            raise UserError(str(path), "is not a sequifier model (no execution contract in its metadata)")
        self.contract: dict[str, Any] = decode(metadata[CONTRACT_KEY])

    def __call__(self, inputs: dict[str, np.ndarray], left_pad_lengths: np.ndarray) -> dict[str, np.ndarray]:
        feed = {name: inputs[name] for name in self.contract["input_columns"]}
        feed[self.contract["pad_input"]] = left_pad_lengths.astype(np.int64)
        targets = self.contract["target_columns"]
        outputs = self.session.run([self.contract["outputs"][t] for t in targets], feed)
        return dict(zip(targets, outputs))
