"""What an artifact computes: the network's forward pass at the predicted positions only.

Inference needs the states of the last `prediction_length` positions. Every layer but the last
runs on all positions, as in training; the last layer (`TransformerLayer(..., queries=N)`)
computes keys and values for all positions but queries, feed-forward and everything after
only for the predicted ones. This is
the same function as `SequifierNetwork.forward` restricted to those positions (tests check
parity), at roughly half the cost of a two-layer model. ONNX export and PT inference both run
this module, so the two artifact kinds compute the same thing.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.model.attention import attention_mask
from sequifier.model.backbone import has_evidence
from sequifier.model.network import SequifierNetwork


def additive_mask(left_pad_lengths: Tensor, length: int, dtype: torch.dtype) -> Tensor:
    """The causal, padding-aware mask as 0 / -inf added to attention scores, built once for all layers."""
    allowed = attention_mask(left_pad_lengths, length)
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(~allowed, float("-inf"))


class InferenceGraph(nn.Module):
    """Positional signature for export: one tensor per input column, then padding lengths.

    Returns one output per target (`generative`) or the final normalized backbone states of
    the predicted positions, [batch, prediction_length, dim_model] (`embedding`).
    """

    def __init__(self, network: SequifierNetwork, interface: str, input_columns: list[str], target_columns: list[str], artifact: str):
        super().__init__()
        self.network = network
        self.interface = interface
        self.input_columns = list(input_columns)
        self.target_columns = list(target_columns)
        self.artifact = artifact
        self.positions = network.interfaces[interface].decoder.prediction_length

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        modules = self.network.interfaces[self.interface]
        backbone = self.network.backbone
        x = modules.adapter(modules.ingestion(dict(zip(self.input_columns, tensors[:-1]))))
        mask = additive_mask(tensors[-1], x.shape[1], x.dtype)
        x = backbone.input_dropout(backbone.position(x))
        layers = list(backbone.layers)
        for layer in layers[:-1]:
            x = layer(x, mask)
        states = backbone.final_norm(layers[-1](x, mask, self.positions))
        if self.artifact == "embedding":
            return (states,)
        outputs = modules.decoder(states, has_evidence(tensors[-1], x.shape[1], self.positions))
        return tuple(outputs[t] for t in self.target_columns)
