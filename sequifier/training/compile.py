"""torch.compile of the training forward pass: the whole network (outer) or each transformer layer (inner).

`outer` compiles a wrapper around the network and leaves the network itself eager, so its state
dict (checkpoints, exports) keeps its own parameter names, without `_orig_mod.`. `inner` compiles
every transformer layer in place (`nn.Module.compile`), the form FSDP can wrap; names do not change.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from sequifier.model.layers import TransformerLayer


def compiled_forward(network: nn.Module, mode: str) -> Callable:
    """What the training step calls to run `network`, compiled as `mode` ("outer", "inner" or "none") says."""
    if mode == "outer":
        return torch.compile(network)
    if mode == "inner":
        for module in network.modules():
            if isinstance(module, TransformerLayer):
                module.compile()
    return network
