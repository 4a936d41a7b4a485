"""Transformer building blocks: normalization, feed-forward and the residual layer."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sequifier.config.schema import ArchitectureConfig
from sequifier.model.attention import SelfAttention
from sequifier.model.dropout import Dropout
from sequifier.model.gated_feed_forward import GATES, gated_down
from sequifier.model.parameters import tag
from sequifier.model.positions import RotaryEmbedding


class RMSNorm(nn.Module):
    """Scales each vector by the inverse of its root mean square."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def make_norm(kind: str, dim: int) -> nn.Module:
    return tag(RMSNorm(dim) if kind == "rmsnorm" else nn.LayerNorm(dim), "normalization")


PLAIN = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}


def feed_forward_width(architecture: ArchitectureConfig) -> int:
    """The feed-forward block's hidden width: `feed_forward.dim`, or 4 x dim_model where it is left out."""
    return architecture.feed_forward.dim or 4 * architecture.dim_model


class FeedForward(nn.Module):
    """Position-wise MLP with dropout after the activation (as in 3.x); gated activations use one fused input
    projection for gate and value."""

    def __init__(self, dim: int, hidden: int, activation: str, dropout: float):
        super().__init__()
        self.gate = GATES.get(activation)
        self.activation = None if self.gate else PLAIN[activation]
        self.up = tag(nn.Linear(dim, 2 * hidden if self.gate else hidden), "feed_forward.up")
        self.down = tag(nn.Linear(hidden, dim), "feed_forward.down")
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        if self.gate:
            return gated_down(self.up(x), self.down, self.gate, self.dropout)
        return self.down(self.dropout(self.activation(self.up(x))))


class TransformerLayer(nn.Module):
    """Attention and feed-forward, each in a residual branch, pre- or post-normalized."""

    def __init__(self, architecture: ArchitectureConfig, rotary: RotaryEmbedding | None):
        super().__init__()
        dim = architecture.dim_model
        attention = architecture.attention
        n_kv_heads = attention.n_kv_heads or (1 if attention.type == "mqa" else attention.n_heads)
        self.norm_first = architecture.normalization.norm_first
        self.attention = SelfAttention(
            dim, attention.n_heads, n_kv_heads, attention.output_projection, architecture.dropout, rotary
        )
        self.feed_forward = FeedForward(
            dim, feed_forward_width(architecture), architecture.feed_forward.activation, architecture.dropout
        )
        self.attention_norm = make_norm(architecture.normalization.type, dim)
        self.feed_forward_norm = make_norm(architecture.normalization.type, dim)
        self.dropout = Dropout(architecture.dropout)

    def forward(self, x: Tensor, mask: Tensor | None, queries: int | None = None) -> Tensor:
        """The layer's output at every position, or at the last `queries` positions only (needs `mask`)."""
        residual = x if queries is None else x[:, x.shape[1] - queries :]
        if self.norm_first:
            h = residual + self.dropout(self.attention(self.attention_norm(x), mask, queries))
            return h + self.dropout(self.feed_forward(self.feed_forward_norm(h)))
        h = self.attention_norm(residual + self.dropout(self.attention(x, mask, queries)))
        return self.feed_forward_norm(h + self.dropout(self.feed_forward(h)))
