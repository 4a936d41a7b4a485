"""Attention with dropout on its weights, for CPU training: exact, with at most one [B, H, T, T] float tensor.

torch's CPU attention kernels have no dropout; with dropout it falls back to a math path that keeps the
scores, the weights and a float mask of every head in memory and passes over them many times. Here a block
of heads at a time is computed while its [T, T] weights are in cache and the dropout mask is kept as bytes
(model/dropout.py). The weights are kept for the backward pass while they fit KEPT_WEIGHTS_BYTES (a training
pass of a few thousand tokens, training/passes.py); larger ones are recomputed there from queries and keys,
as flash attention does. Results equal softmax(q k^T / sqrt(d) + mask) * keep * scale @ v, computed in float32
whatever the inputs' dtypes (bf16 layers, autocast) and returned in the queries' dtype.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sequifier.model.dropout import keep_mask

ROWS_PER_BLOCK = 32  # (batch, head) rows whose [T, T] weights are computed together
KEPT_WEIGHTS_BYTES = 16 * 2**20  # weights of at most this size are kept for backward instead of recomputed


def dropped_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, p: float) -> Tensor:
    """q [B, H, Tq, D], k and v [B, H, Tk, D]; `mask` [B, 1, Tq, Tk] added to the scores, or None for causal."""
    return _DroppedAttention.apply(q, k, v, mask, p)


def _blocks(batch: int, heads: int) -> list[tuple[int, int]]:
    """Row ranges of whole batch elements (so that each block shares its elements' masks)."""
    per_block = max(1, ROWS_PER_BLOCK // heads)
    return [(start * heads, min(start + per_block, batch) * heads) for start in range(0, batch, per_block)]


def _bias(mask: Tensor | None, rows: tuple[int, int], heads: int, q_length: int, k_length: int) -> Tensor:
    if mask is None:
        return torch.full((q_length, k_length), float("-inf")).triu_(1)
    first, last = rows[0] // heads, rows[1] // heads
    block = mask[first:last].expand(last - first, heads, q_length, k_length)
    return block.reshape(-1, q_length, k_length)


def _weights_into(q: Tensor, k: Tensor, bias: Tensor, scale: float, scores: Tensor, weights: Tensor) -> Tensor:
    """softmax(q k^T * scale + bias) written into `weights`, through the scratch tensor `scores`."""
    torch.baddbmm(bias, q, k.transpose(1, 2), alpha=scale, out=scores)
    return torch.ops.aten._softmax.out(scores, -1, False, out=weights)


def _scratch(like: Tensor, blocks: list[tuple[int, int]], q_length: int, k_length: int) -> Tensor:
    """A [rows, Tq, Tk] tensor for the largest block, reused by every block."""
    return like.new_empty((max(last - first for first, last in blocks), q_length, k_length))


class _DroppedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, p: float) -> Tensor:
        batch, heads, q_length, width = q.shape
        k_length = k.shape[2]
        qf, kf, vf = (x.reshape(batch * heads, -1, width).float() for x in (q, k, v))
        mask = mask.float() if mask is not None else None
        keep, keep_scale = keep_mask((batch * heads, q_length, k_length), p)
        scale = width**-0.5
        out = torch.empty_like(qf)
        causal = _bias(None, (0, 0), heads, q_length, k_length) if mask is None else None
        blocks = _blocks(batch, heads)
        scores = _scratch(qf, blocks, q_length, k_length)
        kept_weights = None
        if keep.numel() * qf.element_size() <= KEPT_WEIGHTS_BYTES:
            kept_weights = torch.empty(keep.shape, dtype=qf.dtype)
        else:
            block_weights = _scratch(qf, blocks, q_length, k_length)
        with torch.autocast(q.device.type, enabled=False):
            for rows in blocks:
                block, size = slice(*rows), rows[1] - rows[0]
                bias = causal if causal is not None else _bias(mask, rows, heads, q_length, k_length)
                into = kept_weights[block] if kept_weights is not None else block_weights[:size]
                weights = _weights_into(qf[block], kf[block], bias, scale, scores[:size], into)
                torch.bmm(torch.mul(weights, keep[block], out=scores[:size]), vf[block], out=out[block])
        out.mul_(keep_scale)
        ctx.save_for_backward(qf, kf, vf, keep, out, mask, kept_weights)
        ctx.scales = (scale, keep_scale)
        ctx.shape = (batch, heads, q_length, k_length, width)
        ctx.dtypes = (q.dtype, k.dtype, v.dtype)
        return out.view(batch, heads, q_length, width).to(q.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, Tensor, None, None]:
        qf, kf, vf, keep, out, mask, kept_weights = ctx.saved_tensors
        scale, keep_scale = ctx.scales
        batch, heads, q_length, k_length, width = ctx.shape
        grad_out = grad.reshape(batch * heads, q_length, width).float()
        # sum_j dW_ij W_ij of the softmax backward equals the row's grad_out . out, without a [T, T] pass
        row_dot = (grad_out * out).sum(-1, keepdim=True)
        grad_out = grad_out * keep_scale
        dq, dk, dv = torch.empty_like(qf), torch.empty_like(kf), torch.empty_like(vf)
        causal = _bias(None, (0, 0), heads, q_length, k_length) if mask is None else None
        blocks = _blocks(batch, heads)
        block_dropped, block_grad = _scratch(qf, blocks, q_length, k_length), _scratch(qf, blocks, q_length, k_length)
        if kept_weights is None:
            block_weights = _scratch(qf, blocks, q_length, k_length)
        with torch.autocast(grad.device.type, enabled=False):
            for rows in blocks:
                block, size = slice(*rows), rows[1] - rows[0]
                if kept_weights is not None:
                    weights = kept_weights[block]
                else:
                    bias = causal if causal is not None else _bias(mask, rows, heads, q_length, k_length)
                    weights = _weights_into(qf[block], kf[block], bias, scale, block_grad[:size], block_weights[:size])
                dropped = torch.mul(weights, keep[block], out=block_dropped[:size])
                torch.bmm(dropped.transpose(1, 2), grad_out[block], out=dv[block])
                scores_grad = torch.bmm(grad_out[block], vf[block].transpose(1, 2), out=block_grad[:size])
                # W * (dP * keep - row_dot), with W * keep the dropped weights already at hand
                scores_grad.mul_(dropped).addcmul_(weights, row_dot[block], value=-1)
                torch.bmm(scores_grad, kf[block], out=dq[block])
                torch.bmm(scores_grad.transpose(1, 2), qf[block], out=dk[block])
        shape = (batch, heads, -1, width)
        q_dtype, k_dtype, v_dtype = ctx.dtypes
        return (
            dq.mul_(scale).view(shape).to(q_dtype),
            dk.mul_(scale).view(shape).to(k_dtype),
            dv.view(shape).to(v_dtype),
            None,
            None,
        )
