"""Backbone options behave as their names promise."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sequifier.config.schema import (
    ArchitectureConfig,
    AttentionConfig,
    FeedForwardConfig,
    NormalizationConfig,
    PositionEncodingConfig,
)
from sequifier.model.attention import SelfAttention, attention_mask, fused_attention
from sequifier.model.backbone import Backbone
from sequifier.model.positions import RotaryEmbedding


def architecture(**changes) -> ArchitectureConfig:
    values = dict(
        dim_model=16,
        num_layers=2,
        attention=AttentionConfig(n_heads=4),
        feed_forward=FeedForwardConfig(dim=32),
        position_encoding=PositionEncodingConfig(type="rope"),
    )
    values.update(changes)
    return ArchitectureConfig(**values)


def test_gqa_with_as_many_kv_heads_as_heads_equals_mha():
    torch.manual_seed(0)
    mha = SelfAttention(16, 4, 4, True, 0.0, None)
    gqa = SelfAttention(16, 4, 4, True, 0.0, None)
    gqa.load_state_dict(mha.state_dict())
    x = torch.randn(2, 5, 16)
    assert torch.equal(mha(x, None), gqa(x, None))


def test_grouped_heads_share_keys_and_values():
    torch.manual_seed(0)
    gqa = SelfAttention(16, 4, 2, True, 0.0, None)
    x = torch.randn(1, 3, 16)
    assert gqa.qkv.weight.shape == ((4 + 2 * 2) * 4, 16)
    assert gqa(x, None).shape == (1, 3, 16)


@pytest.mark.parametrize("kind, kv_heads, qkv_rows", [("mha", None, 48), ("mqa", None, 24), ("gqa", 2, 32)])
def test_attention_parameter_counts(kind, kv_heads, qkv_rows):
    backbone = Backbone(architecture(attention=AttentionConfig(type=kind, n_heads=4, n_kv_heads=kv_heads)), 8)
    assert backbone.layers[0].attention.qkv.weight.shape == (qkv_rows, 16)


def test_rotary_scores_depend_only_on_relative_position():
    rotary = RotaryEmbedding(8, 32, 10000.0)
    q, k = torch.randn(8), torch.randn(8)
    rows = torch.stack([q] * 32)[None, :, None]  # [batch, time, heads, head_dim]
    cols = torch.stack([k] * 32)[None, :, None]
    rq, rk = rotary(rows)[0, :, 0], rotary(cols)[0, :, 0]
    assert torch.allclose(rq[3] @ rk[1], rq[13] @ rk[11], atol=1e-5)
    assert torch.allclose(rq[7] @ rk[7], rq[20] @ rk[20], atol=1e-5)
    assert not torch.allclose(rq[3] @ rk[1], rq[3] @ rk[2], atol=1e-3)


def test_shared_layer_groups_share_tensors_and_cut_parameters():
    plain = Backbone(architecture(num_layers=4), 8)
    shared = Backbone(architecture(num_layers=4, shared_layer_groups=((1, 3),)), 8)
    assert shared.layers[1] is shared.layers[3]
    assert shared.layers[1].attention.qkv.weight is shared.layers[3].attention.qkv.weight
    assert shared.layers[0] is not shared.layers[2]
    count = lambda module: sum(p.numel() for p in module.parameters())
    per_layer = count(plain.layers[0])
    assert count(plain) - count(shared) == per_layer


@pytest.mark.parametrize("norm", ["rmsnorm", "layernorm"])
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["swiglu", "geglu", "gelu", "relu", "silu"])
def test_every_normalization_and_activation_trains(norm, norm_first, activation):
    torch.manual_seed(1)
    backbone = Backbone(
        architecture(
            normalization=NormalizationConfig(type=norm, norm_first=norm_first),
            feed_forward=FeedForwardConfig(dim=32, activation=activation),
        ),
        8,
    )
    head = torch.nn.Linear(16, 1)
    optimizer = torch.optim.Adam(list(backbone.parameters()) + list(head.parameters()), lr=3e-3)
    x = torch.randn(32, 8, 16)
    target = x[:, :, :1].cumsum(dim=1)
    losses = []
    for _ in range(40):
        loss = torch.nn.functional.mse_loss(head(backbone(x, None)), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("padded", [False, True])
def test_fused_attention_under_cpu_autocast_computes_in_float32(padded):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 8).bfloat16().requires_grad_() for _ in range(3))
    mask = attention_mask(torch.tensor([0, 2]), 6, torch.bfloat16) if padded else None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        attended = fused_attention(q, k, v, mask, 0.0)
    expected = F.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=mask.float() if padded else None, is_causal=not padded
    )
    assert attended.dtype == torch.float32
    torch.testing.assert_close(attended, expected, rtol=0, atol=0)
    attended.sum().backward()
    assert q.grad.dtype == k.grad.dtype == v.grad.dtype == torch.bfloat16
    # outside autocast, torch's kernel runs in the inputs' dtype
    assert fused_attention(q.detach(), k.detach(), v.detach(), mask, 0.0).dtype == torch.bfloat16
