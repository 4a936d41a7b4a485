"""Dropout for CPU training: masks drawn 16 bits per element, kept as bytes for the backward pass.

torch's CPU dropout draws a Bernoulli sample per element, which costs several times more than the rest of
a dropout. Here one 64-bit word decides four elements: an element is dropped when its 16-bit lane is below
round(p * 65536), and kept ones are scaled by 65536 / (65536 - that threshold), the exact inverse of the keep
rate, so expectations are preserved. The words come from numpy's SFC64 generator, three times as fast as
torch's CPU generator, seeded by one draw from torch's default generator per mask: seeds, checkpoints and
resumes govern the masks as they govern any other dropout. On other devices, under ONNX export (whose graph
needs Dropout nodes) and under torch.compile (which fuses its own), torch's dropout runs.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sequifier.model.eager import runs_eagerly

LEVELS = 1 << 16


def uses_byte_masks(x: Tensor, p: float, training: bool) -> bool:
    return training and 0.0 < p < 1.0 and x.device.type == "cpu" and runs_eagerly()


def keep_mask(shape: tuple[int, ...], p: float) -> tuple[Tensor, float]:
    """A uint8 tensor of `shape`, 1 where an element is kept, and the scale of kept elements."""
    count = math.prod(shape)
    lanes = random_words((count + 3) // 4).view(np.int16)[:count]
    dropped = round(p * LEVELS)
    kept = np.greater_equal(lanes, np.int16(dropped - LEVELS // 2))  # numpy's compare: 5x torch's on int16
    return torch.from_numpy(kept).view(torch.uint8).view(shape), LEVELS / (LEVELS - dropped)


def random_words(count: int) -> np.ndarray:
    """`count` uniform 64-bit words from a stream seeded by the next draw of torch's default generator."""
    seed = int(torch.empty((), dtype=torch.int64).random_(-(1 << 63), None)) % (1 << 64)
    return np.random.SFC64(seed).random_raw(count)


class _Masked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, keep: Tensor, scale: float) -> Tensor:
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return torch.mul(x, keep).mul_(scale)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        (keep,) = ctx.saved_tensors
        return torch.mul(grad, keep).mul_(ctx.scale), None, None


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    if not uses_byte_masks(x, p, training):
        return F.dropout(x, p, training)
    keep, scale = keep_mask(tuple(x.shape), p)
    return _Masked.apply(x, keep, scale)


class Dropout(nn.Module):
    """nn.Dropout's interface and semantics, with byte masks in CPU training."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
