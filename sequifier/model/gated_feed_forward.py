"""The gated feed-forward's act(gate) * value -> dropout -> down projection, kept lean in memory while autograd records.

Autograd through the plain expression keeps three tensors per layer: the up projection's output [N, 2F]
(through the gate and value views), act(gate) [N, F] and the product that enters the down projection [N, F];
its backward then concatenates the gate's and the value's gradients. Here one autograd Function keeps only
the up projection's output, the down weight and the dropout's byte mask (model/dropout.py), recomputes
act(gate) and the product in backward, and writes both halves of the up output's gradient into one tensor.
Results equal the plain expression's in the dtype the down projection computes in: its weight's, or
autocast's, which the Function applies itself (the up output then arrives in it). Without recording, under
ONNX export, under torch.compile (which fuses its own), when the up projection's output is not in that dtype,
and where dropout runs as torch's (model/dropout.py), the plain expression runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from sequifier.model.dropout import Dropout, keep_mask, uses_byte_masks
from sequifier.model.eager import runs_eagerly


@dataclass(frozen=True)
class Gate:
    """An activation of the gate and its derivative times an incoming gradient, written into `out`."""

    function: Callable[[Tensor], Tensor]
    chain_rule: Callable[[Tensor, Tensor, Tensor], Tensor]


def _silu_chain_rule(grad: Tensor, gate: Tensor, out: Tensor) -> Tensor:
    return torch.ops.aten.silu_backward.grad_input(grad, gate, grad_input=out)


def _gelu_chain_rule(grad: Tensor, gate: Tensor, out: Tensor) -> Tensor:
    return torch.ops.aten.gelu_backward.grad_input(grad, gate, approximate="none", grad_input=out)


GATES = {"swiglu": Gate(F.silu, _silu_chain_rule), "geglu": Gate(F.gelu, _gelu_chain_rule)}


def gated_down(up: Tensor, down: nn.Linear, gate: Gate, dropout: Dropout) -> Tensor:
    """down(dropout(gate.function(g) * v)), where g and v are the first and second halves of `up`'s last dimension."""
    byte_masks = uses_byte_masks(up, dropout.p, dropout.training)
    if _fuses(up, down) and (byte_masks or not dropout.training or dropout.p == 0):
        keep, scale = keep_mask((*up.shape[:-1], up.shape[-1] // 2), dropout.p) if byte_masks else (None, 1.0)
        return _GatedDown.apply(up, down.weight, down.bias, gate, keep, scale)
    gate_half, value = up.chunk(2, dim=-1)
    return down(dropout(gate.function(gate_half) * value))


def _fuses(up: Tensor, down: nn.Linear) -> bool:
    return (
        torch.is_grad_enabled()
        and (up.requires_grad or any(p.requires_grad for p in down.parameters()))
        and up.dtype == _product_dtype(up, down.weight)
        and runs_eagerly()
    )


def _product_dtype(up: Tensor, weight: Tensor) -> torch.dtype:
    """The dtype the down projection computes in: autocast's where it is on (for a float32 weight), else its own."""
    device = up.device.type
    if torch.is_autocast_enabled(device) and weight.dtype == torch.float32:
        return torch.get_autocast_dtype(device)
    return weight.dtype


class _GatedDown(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx, up: Tensor, weight: Tensor, bias: Tensor | None, gate: Gate, keep: Tensor | None, scale: float
    ) -> Tensor:
        gate_half, value = up.chunk(2, dim=-1)
        ctx.save_for_backward(up, weight, keep)
        ctx.gate, ctx.scale = gate, scale
        hidden = _dropped(gate.function(gate_half).mul_(value), keep, scale)
        with torch.autocast(up.device.type, enabled=False):
            return F.linear(hidden, weight.to(up.dtype), bias.to(up.dtype) if bias is not None else None)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None, None, None, None]:
        up, weight, keep = ctx.saved_tensors
        needs_up, needs_weight, needs_bias = ctx.needs_input_grad[:3]
        grad = grad.reshape(-1, weight.shape[0]).to(up.dtype)
        gate_half, value = up.reshape(-1, up.shape[-1]).chunk(2, dim=-1)
        keep = keep.view(-1, keep.shape[-1]) if keep is not None else None
        activated = ctx.gate.function(gate_half)
        grad_up = None
        if needs_up:
            grad_hidden = _dropped(grad.mm(weight.to(up.dtype)), keep, ctx.scale)
            grad_up = torch.empty(up.shape, dtype=up.dtype, device=up.device)
            grad_gate, grad_value = grad_up.view(-1, up.shape[-1]).chunk(2, dim=-1)
            torch.mul(grad_hidden, activated, out=grad_value)
            ctx.gate.chain_rule(grad_hidden.mul_(value), gate_half, grad_gate)
        grad_weight = None
        if needs_weight:
            grad_weight = grad.t().mm(_dropped(activated.mul_(value), keep, ctx.scale)).to(weight.dtype)
        grad_bias = grad.sum(0, dtype=weight.dtype) if needs_bias else None
        return grad_up, grad_weight, grad_bias, None, None, None


def _dropped(hidden: Tensor, keep: Tensor | None, scale: float) -> Tensor:
    """`hidden` times the dropout's kept-element mask and scale, in place; unchanged without a mask."""
    return hidden if keep is None else hidden.mul_(keep).mul_(scale)
