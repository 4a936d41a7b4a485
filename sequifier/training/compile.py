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


def compile_layers(network: nn.Module, mode: str) -> None:
    """For `inner`: compile every transformer layer in place, before any FSDP sharding wraps them."""
    if mode == "inner":
        for module in network.modules():
            if isinstance(module, TransformerLayer):
                module.compile()


def compiled_forward(module: nn.Module, mode: str) -> Callable:
    """What the training step calls to run `module` (the network, or DDP around it): compiled whole for `outer`."""
    return torch.compile(module) if mode == "outer" else module
