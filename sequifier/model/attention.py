"""Self-attention with multi-head, multi-query and grouped-query layouts over scaled_dot_product_attention."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sequifier.model.dropout import uses_byte_masks
from sequifier.model.dropped_attention import dropped_attention
from sequifier.model.parameters import tag
from sequifier.model.positions import RotaryEmbedding


def attention_mask(left_pad_lengths: Tensor | None, length: int, dtype: torch.dtype) -> Tensor | None:
    """Causal mask that also hides left padding, as 0 / -inf added to the scores: [batch, 1, time, time].

    None when nothing is padded: attention then uses the built-in causal kernel. A padded query
    attends to itself only, so no row is empty. Built once per forward pass for all layers.
    """
    if left_pad_lengths is None:
        return None
    slots = torch.arange(length, device=left_pad_lengths.device)
    key_valid = slots[None, :] >= left_pad_lengths[:, None]
    causal = slots[:, None] >= slots[None, :]
    own_slot = slots[:, None] == slots[None, :]
    allowed = ((causal[None] & key_valid[:, None, :]) | own_slot[None])[:, None]
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(~allowed, float("-inf"))


def fused_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout: float) -> Tensor:
    """torch's scaled_dot_product_attention, causal where `mask` is None.

    On a CPU under autocast it computes in float32 and returns that: torch's bf16 CPU kernels (the backward
    above all) run slower than its float32 ones, which made bf16 training slower than float32 without dropout.
    """
    if q.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            mask = mask.float() if mask is not None else None
            return fused_attention(q.float(), k.float(), v.float(), mask, dropout)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None, dropout_p=dropout)


class SelfAttention(nn.Module):
    """Projects to queries, keys and values in one matmul; kv heads are shared by query groups.

    The projections have no biases (as in sequifier 3.x).
    """

    def __init__(
        self,
        dim: int,
        n_heads: int,
        n_kv_heads: int,
        output_projection: bool,
        dropout: float,
        rotary: RotaryEmbedding | None,
    ):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.dropout = dropout
        self.rotary = rotary
        self.qkv = tag(nn.Linear(dim, (n_heads + 2 * n_kv_heads) * self.head_dim, bias=False), "attention.qkv")
        self.output = tag(nn.Linear(dim, dim, bias=False), "attention.output") if output_projection else nn.Identity()

    def forward(self, x: Tensor, mask: Tensor | None, queries: int | None = None) -> Tensor:
        """Attention of every position, or of the last `queries` positions only (over all keys; needs `mask`)."""
        batch, length, _ = x.shape
        heads, kv_heads = self.n_heads, self.n_kv_heads
        qkv = self.qkv(x).view(batch, length, heads + 2 * kv_heads, self.head_dim)
        qk, v = qkv.split((heads + kv_heads, kv_heads), dim=2)  # one concatenation in backward, not two fills
        if self.rotary is not None:
            qk = self.rotary(qk)  # queries and keys in one pass, in the projection's layout
            if qk.dtype != v.dtype and not torch.is_autocast_enabled(x.device.type):
                qk = qk.to(v.dtype)  # low-precision parameters (FSDP's bf16 compute) compute in their dtype
        q, k = (t.transpose(1, 2) for t in qk.split((heads, kv_heads), dim=2))
        v = v.transpose(1, 2)
        if queries is not None:
            q, mask = q[:, :, length - queries :], mask[:, :, length - queries :]
        if self.n_kv_heads != self.n_heads:
            groups = self.n_heads // self.n_kv_heads
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
        if uses_byte_masks(q, self.dropout, self.training):
            attended = dropped_attention(q, k, v, mask, self.dropout)
        else:
            attended = fused_attention(q, k, v, mask, self.dropout if self.training else 0.0)
        return self.output(attended.transpose(1, 2).reshape(batch, q.shape[2], heads * self.head_dim))
