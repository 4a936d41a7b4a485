"""Position encodings: rotary (applied inside attention), learned and sinusoidal (added to inputs), and their scope.

Temporal positions are added either per feature, by a learned table per input column at each
leaf ingestion branch, or globally, by one table (learned or sinusoidal) in the backbone.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from sequifier.config.schema import ArchitectureConfig
from sequifier.model.eager import runs_eagerly
from sequifier.model.parameters import tag


def position_scope(architecture: ArchitectureConfig) -> str:
    """The configured positional_encoding_scope, or per_feature (global for sinusoidal, which is never per feature)."""
    if architecture.positional_encoding_scope is not None:
        return architecture.positional_encoding_scope
    return "global" if architecture.position_encoding.type == "sinusoidal" else "per_feature"


def feature_position_rows(architecture: ArchitectureConfig, context_length: int) -> int:
    """Rows of each per-feature learned position table at the leaf branches; 0 when there are none."""
    per_feature = architecture.position_encoding.type == "learned" and position_scope(architecture) == "per_feature"
    return context_length if per_feature else 0


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
        """x: [batch, time, heads, head_dim] -> the same shape, rotated."""
        length = x.shape[1]
        cos, sin = self.cos[:length, None], self.sin[:length, None]
        if records_rotation_backward(x):
            return RotationFunction.apply(x, cos, sin)
        first, second = x.chunk(2, dim=-1)  # the traced form of `rotate`, for inference, ONNX export and compile
        return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)


def records_rotation_backward(x: Tensor) -> bool:
    """Whether autograd records this rotation in an eager run, where the hand-written backward pays off."""
    if not (torch.is_grad_enabled() and x.requires_grad):
        return False
    return runs_eagerly()


def rotate(x: Tensor, cos: Tensor, sin: Tensor, out: Tensor, direction: int) -> Tensor:
    """Writes x's half-split channel pairs into `out`, turned by the angles (+1) or back by them (-1)."""
    first, second = x.chunk(2, dim=-1)
    out_first, out_second = torch.mul(x, torch.cat((cos, cos), dim=-1), out=out).chunk(2, dim=-1)  # one wide pass
    out_first.addcmul_(second, sin, value=-direction)
    out_second.addcmul_(first, sin, value=direction)
    return out


class RotationFunction(torch.autograd.Function):
    """Rotation whose backward is the inverse rotation: it keeps no activations, only the constant angles."""

    @staticmethod
    def forward(ctx, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        ctx.cos, ctx.sin, ctx.input_dtype = cos, sin, x.dtype
        return rotate(x, cos, sin, x.new_empty(x.shape, dtype=torch.promote_types(x.dtype, cos.dtype)), 1)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        turned_back = rotate(grad, ctx.cos, ctx.sin, grad.new_empty(grad.shape), -1)
        return turned_back.to(ctx.input_dtype), None, None


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
