"""Depth transformer ingestion: one token per outer time step from the child collection of a depth layout.

At every time step the child slots of the branch's layout are embedded (an embedding per deep
column, concatenated and projected to the depth width when it differs), a learned CLS vector is
put in front (position 0; child slot s is position s+1), positions are added (learned or
sinusoidal; rope rotates inside attention), and a transformer whose attention sees only the CLS
and the valid slots runs across them. The CLS output, projected to the branch's width when it
differs, is the time step's token. A collection without valid slots (empty, or a padded time
step) reads the CLS alone: a learned representation of emptiness. Values in invalid slots never
reach the computation. `architecture.dropout` applies after the positions and inside the layers,
the branch's `dropout` to its output. With per-feature temporal positions the branch, a leaf,
adds its own learned table to its output.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.config.network import ColumnSpec, depth_mask_input
from sequifier.config.schema import ArchitectureConfig
from sequifier.model.backbone import shared_layers
from sequifier.model.dropout import Dropout
from sequifier.model.ingestion.embedding import column_embedding, embed
from sequifier.model.layers import make_norm
from sequifier.model.parameters import tag
from sequifier.model.positions import LearnedPositions, RotaryEmbedding, SinusoidalPositions

CLS_STD = 0.02  # the CLS vector starts as N(0, 0.02), as in sequifier 3.x


class DepthTransformerIngestion(nn.Module):
    """Deep columns [batch, time, capacity] and the layout's validity mask -> [batch, time, output_dim]."""

    def __init__(
        self,
        columns: list[ColumnSpec],
        widths: dict[str, int],
        architecture: ArchitectureConfig,
        output_dim: int,
        position_rows: int,
        dropout: float,
    ):
        super().__init__()
        dim = architecture.dim_model
        length = columns[0].capacity + 1
        self.column_names = [c.name for c in columns]
        self.mask_input = depth_mask_input(columns[0].layout)
        self.embeddings = nn.ModuleDict({c.name: column_embedding(c, widths[c.name]) for c in columns})
        total = sum(widths.values())
        self.input_projection = (
            tag(nn.Linear(total, dim), "ingestion.output_projection") if total != dim else nn.Identity()
        )
        self.cls = nn.Parameter(torch.randn(dim) * CLS_STD)
        encoding = architecture.position_encoding
        rotary = None
        self.position: nn.Module = nn.Identity()
        if encoding.type == "rope":
            rotary = RotaryEmbedding(dim // architecture.attention.n_heads, length, encoding.theta)
        elif encoding.type == "sinusoidal":
            self.position = SinusoidalPositions(dim, length)
        else:
            self.position = LearnedPositions(dim, length)
        self.position_dropout = Dropout(architecture.dropout)
        self.layers = nn.ModuleList(shared_layers(architecture, rotary))
        self.final_norm = (
            make_norm(architecture.normalization.type, dim) if architecture.normalization.norm_first else nn.Identity()
        )
        self.output_projection = (
            tag(nn.Linear(dim, output_dim), "ingestion.output_projection") if dim != output_dim else nn.Identity()
        )
        self.temporal_positions = tag(nn.Embedding(position_rows, output_dim), "position") if position_rows else None
        self.dropout = Dropout(dropout) if dropout else nn.Identity()

    def forward(self, inputs: dict[str, Tensor]) -> Tensor:
        valid = inputs[self.mask_input]
        parts = [
            embed(self.embeddings[name], torch.where(valid, inputs[name], torch.zeros_like(inputs[name])))
            for name in self.column_names
        ]
        children = self.input_projection(torch.cat(parts, dim=-1))
        batch, time, capacity, dim = children.shape
        collections = children.reshape(batch * time, capacity, dim)
        tokens = torch.cat([self.cls.expand(batch * time, 1, dim), collections], dim=1)
        x = self.position_dropout(self.position(tokens))
        seen = torch.cat([torch.ones_like(valid[..., :1]), valid], dim=-1).reshape(batch * time, 1, 1, capacity + 1)
        mask = torch.zeros(seen.shape, dtype=x.dtype, device=x.device).masked_fill(~seen, float("-inf"))
        for layer in self.layers:
            x = layer(x, mask)
        pooled = self.final_norm(x[:, 0]).reshape(batch, time, dim)
        out = self.output_projection(pooled)
        if self.temporal_positions is not None:
            out = out + self.temporal_positions.weight[:time]
        return self.dropout(out)
