"""The shared transformer backbone: positions, a stack of layers and a final normalization."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.config.schema import ArchitectureConfig
from sequifier.model.attention import attention_mask
from sequifier.model.dropout import Dropout
from sequifier.model.layers import TransformerLayer, make_norm
from sequifier.model.positions import LearnedPositions, RotaryEmbedding, SinusoidalPositions, position_scope


class Backbone(nn.Module):
    """Maps [batch, time, dim_model] inputs to causally contextualized states of the same shape.

    Global positions (sinusoidal, or learned with global scope) are added here, then dropout (with
    other positions the inputs are not dropped, as in 3.x); per-feature learned positions belong to
    the leaf ingestion branches.
    """

    def __init__(self, architecture: ArchitectureConfig, max_length: int):
        super().__init__()
        dim = architecture.dim_model
        self.dim_model = dim
        encoding = architecture.position_encoding
        rotary = None
        self.position: nn.Module = nn.Identity()
        if encoding.type == "rope":
            rotary = RotaryEmbedding(dim // architecture.attention.n_heads, max_length, encoding.theta)
        elif encoding.type == "sinusoidal":
            self.position = SinusoidalPositions(dim, max_length)
        elif position_scope(architecture) == "global":
            self.position = LearnedPositions(dim, max_length)
        added_positions = not isinstance(self.position, nn.Identity)
        self.input_dropout = Dropout(architecture.dropout) if added_positions else nn.Identity()  # as in 3.x
        self.layers = nn.ModuleList(shared_layers(architecture, rotary))
        self.final_norm = (
            make_norm(architecture.normalization.type, dim) if architecture.normalization.norm_first else nn.Identity()
        )

    def forward(self, x: Tensor, left_pad_lengths: Tensor | None, queries: int | None = None) -> Tensor:
        """States of every position, or of the last `queries` only (inference).

        With `queries`, every layer but the last runs on all positions; the last computes keys and
        values of all positions but queries, feed-forward and the final norm only for those.
        """
        if queries is not None and left_pad_lengths is None:
            left_pad_lengths = torch.zeros(x.shape[0], dtype=torch.int64, device=x.device)
        mask = attention_mask(left_pad_lengths, x.shape[1], x.dtype)
        x = self.input_dropout(self.position(x))
        *earlier, last = self.layers
        for layer in earlier:
            x = layer(x, mask)
        return self.final_norm(last(x, mask, queries))


def has_evidence(left_pad_lengths: Tensor | None, length: int, positions: int) -> Tensor | None:
    """[batch, positions] for the last `positions` of `length` slots: whether the slot holds a real item.

    A padded slot has seen no real item (attention is causal), so what follows it is predicted
    without evidence. None when nothing is padded.
    """
    if left_pad_lengths is None:
        return None
    slots = torch.arange(length - positions, length, device=left_pad_lengths.device)
    return slots[None, :] >= left_pad_lengths[:, None]


def shared_layers(architecture: ArchitectureConfig, rotary: RotaryEmbedding | None) -> list[TransformerLayer]:
    """One layer per index; every index of a shared_layer_groups entry gets the same layer object."""
    owner = {}
    for group in architecture.shared_layer_groups:
        for index in group:
            owner[index] = min(group)
    layers: list[TransformerLayer] = []
    for index in range(architecture.num_layers):
        source = owner.get(index, index)
        layers.append(layers[source] if source < index else TransformerLayer(architecture, rotary))
    return layers
