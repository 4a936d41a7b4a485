"""Byte-mask dropout and blocked attention dropout: the exact functions they stand for, reproducible, unbiased."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import sequifier.model.dropped_attention as dropped_attention_module
from sequifier.model.attention import attention_mask
from sequifier.model.dropout import Dropout, keep_mask, random_words
from sequifier.model.dropped_attention import dropped_attention


def test_every_lane_of_the_draws_is_uniform():
    torch.manual_seed(0)
    lanes = torch.from_numpy(random_words(200_000).view(np.int16)).view(-1, 4).float()
    for lane in lanes.T:
        assert abs(float((lane < 0).float().mean()) - 0.5) < 0.01
        assert abs(float(lane.mean())) < 400  # the mean of a uniform 16-bit lane is -0.5, its sd ~18,900


def test_masks_follow_torch_seed_and_advance_its_generator():
    torch.manual_seed(4)
    first, _ = keep_mask((64, 64), 0.3)
    second, _ = keep_mask((64, 64), 0.3)
    torch.manual_seed(4)
    again, _ = keep_mask((64, 64), 0.3)
    assert torch.equal(first, again)
    assert not torch.equal(first, second)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_masks_drop_at_the_rate_and_scale_by_its_inverse(p):
    torch.manual_seed(1)
    keep, scale = keep_mask((400, 1000), p)
    assert keep.dtype == torch.uint8
    assert abs(1 - float(keep.float().mean()) - p) < 0.005
    assert scale == pytest.approx(1 / (1 - p), rel=1e-4)


def test_dropout_applies_the_drawn_mask_forward_and_backward():
    x = torch.randn(8, 16, 32, requires_grad=True)
    torch.manual_seed(3)
    out = Dropout(0.2).train()(x)
    torch.manual_seed(3)
    keep, scale = keep_mask((8, 16, 32), 0.2)
    assert torch.equal(out, x * keep * scale)
    grad = torch.randn_like(out)
    out.backward(grad)
    assert torch.allclose(x.grad, grad * keep * scale)


def test_dropout_is_the_identity_in_eval_and_at_zero():
    x = torch.randn(4, 8)
    assert torch.equal(Dropout(0.3).eval()(x), x)
    assert torch.equal(Dropout(0.0).train()(x), x)


def _reference(q, k, v, mask, keep, scale):
    """softmax(q k^T / sqrt(d) + mask) * keep * scale @ v in float64, with autograd."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    length = q.shape[2]
    if mask is None:
        mask = torch.zeros(length, length, dtype=torch.float64).masked_fill(
            torch.ones(length, length, dtype=torch.bool).triu(1), float("-inf")
        )
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + mask.double()
    out = (torch.softmax(scores, -1) * keep.view(scores.shape[0], -1, *scores.shape[2:]).double() * scale) @ v
    return out, (q, k, v)


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("batch", [3, 9])
@pytest.mark.parametrize("weights", ["kept", "recomputed"])
def test_dropped_attention_equals_the_math_it_stands_for(padded, batch, weights, monkeypatch):
    if weights == "recomputed":
        monkeypatch.setattr(dropped_attention_module, "KEPT_WEIGHTS_BYTES", 0)
    torch.manual_seed(5)
    heads, length, width = 4, 12, 8
    q, k, v = (torch.randn(batch, heads, length, width, requires_grad=True) for _ in range(3))
    pad = torch.randint(0, length - 1, (batch,)) if padded else None
    mask = attention_mask(pad, length, torch.float32)
    torch.manual_seed(7)
    out = dropped_attention(q, k, v, mask, 0.25)
    torch.manual_seed(7)
    keep, scale = keep_mask((batch * heads, length, length), 0.25)
    expected, leaves = _reference(q, k, v, mask, keep, scale)
    assert torch.allclose(out.double(), expected, atol=1e-5)
    grad = torch.randn_like(out)
    out.backward(grad)
    expected.backward(grad.double())
    for ours, theirs in zip((q, k, v), leaves):
        assert torch.allclose(ours.grad.double(), theirs.grad, atol=1e-5)


def test_dropped_attention_without_drops_equals_torch_attention():
    torch.manual_seed(11)
    q, k, v = (torch.randn(5, 2, 10, 4, requires_grad=True) for _ in range(3))
    ours = dropped_attention(q, k, v, None, 1e-9)
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(ours, theirs, atol=1e-6)


def test_dropped_attention_computes_in_float32_for_bf16_inputs_and_under_autocast():
    torch.manual_seed(13)
    q, k, v = (torch.randn(3, 2, 10, 8) for _ in range(3))
    torch.manual_seed(17)
    expected = dropped_attention(q, k, v, None, 0.2)
    low = [t.bfloat16().requires_grad_() for t in (q, k, v)]
    torch.manual_seed(17)
    out = dropped_attention(*low, None, 0.2)
    assert out.dtype == torch.bfloat16
    assert torch.allclose(out.float(), expected, atol=0.05)
    out.float().sum().backward()
    assert all(t.grad.dtype == torch.bfloat16 for t in low)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.manual_seed(17)
        mixed = dropped_attention(low[0], k, v, attention_mask(torch.tensor([0, 2, 5]), 10, torch.float32), 0.2)
    assert mixed.dtype == torch.bfloat16
