"""Whether sequifier's hand-written training Functions may run: an eager pass, neither traced for ONNX nor compiled.

The ONNX graph needs torch's own operators (Dropout nodes, plain rotations), and torch.compile fuses its own.
"""

from __future__ import annotations

import torch


def runs_eagerly() -> bool:
    return not (torch.onnx.is_in_onnx_export() or torch.compiler.is_compiling())
