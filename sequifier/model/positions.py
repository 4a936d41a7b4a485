"""Position encodings: rotary (applied inside attention), learned and sinusoidal (added to inputs)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from sequifier.model.parameters import tag


class RotaryEmbedding(nn.Module):
    """Rotates query/key channel pairs by position-dependent angles (RoPE, half-split layout)."""

    def __init__(self, head_dim: int, max_length: int, theta: float):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rotary position encoding needs an even head width, got {head_dim}")
        frequencies = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.outer(torch.arange(max_length, dtype=torch.float64), frequencies)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        """x: [batch, heads, time, head_dim] -> the same shape, rotated."""
        length = x.shape[-2]
        cos, sin = self.cos[:length], self.sin[:length]
        first, second = x.chunk(2, dim=-1)
        return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)


class LearnedPositions(nn.Module):
    """One trained vector per slot, added to the inputs."""

    def __init__(self, dim: int, max_length: int):
        super().__init__()
        self.position = tag(nn.Embedding(max_length, dim), "position")

    def forward(self, x: Tensor) -> Tensor:
        return x + self.position.weight[: x.shape[1]]


class SinusoidalPositions(nn.Module):
    """Fixed sine/cosine vectors per slot, added to the inputs."""

    def __init__(self, dim: int, max_length: int):
        super().__init__()
        positions = torch.arange(max_length, dtype=torch.float64)[:, None]
        scales = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
        table = torch.zeros(max_length, dim, dtype=torch.float64)
        table[:, 0::2] = torch.sin(positions * scales)
        table[:, 1::2] = torch.cos(positions * scales)[:, : dim // 2]
        self.register_buffer("table", table.float(), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.table[: x.shape[1]]
