"""The backbone is causal, ignores left padding and drops out where 3.x does."""

from __future__ import annotations

import pytest
import torch

import sequifier.model.dropout as dropout_module
from sequifier.config.schema import ArchitectureConfig, AttentionConfig, FeedForwardConfig, PositionEncodingConfig
from sequifier.model.backbone import Backbone


def make_backbone(position: str = "rope", dropout: float = 0.0, **architecture) -> Backbone:
    torch.manual_seed(0)
    architecture = ArchitectureConfig(
        dim_model=16,
        num_layers=2,
        attention=AttentionConfig(n_heads=4),
        feed_forward=FeedForwardConfig(dim=32),
        position_encoding=PositionEncodingConfig(type=position),
        dropout=dropout,
        **architecture,
    )
    return Backbone(architecture, max_length=12).eval()


@pytest.mark.parametrize(
    "position, scope, input_dropped",
    [("rope", None, False), ("learned", "per_feature", False), ("learned", "global", True), ("sinusoidal", None, True)],
)
def test_dropout_runs_at_the_sites_of_3x(monkeypatch, position, scope, input_dropped):
    drawn = []  # elements of each mask, in the order drawn
    draw = dropout_module.random_words
    monkeypatch.setattr(dropout_module, "random_words", lambda count: drawn.append(count * 4) or draw(count))
    backbone = make_backbone(position, dropout=0.1, positional_encoding_scope=scope).train()
    backbone(torch.randn(2, 8, 16), None).sum().backward()
    batch_time = 2 * 8
    per_layer = [
        2 * 4 * 8 * 8,
        batch_time * 16,
        batch_time * 32,
        batch_time * 16,
    ]  # weights, branch, activation, branch
    assert drawn == [batch_time * 16] * input_dropped + per_layer * 2


def test_changing_a_later_input_leaves_earlier_outputs_unchanged():
    backbone = make_backbone()
    x = torch.randn(3, 10, 16)
    changed = x.clone()
    changed[:, 6:] = torch.randn(3, 4, 16)
    with torch.no_grad():
        before, after = backbone(x, None), backbone(changed, None)
    assert torch.allclose(before[:, :6], after[:, :6], atol=1e-6)
    assert not torch.allclose(before[:, 6:], after[:, 6:], atol=1e-3)


def test_left_padding_changes_no_unpadded_output():
    backbone = make_backbone("rope")
    real = torch.randn(1, 7, 16)
    padded = torch.cat([torch.randn(1, 3, 16) * 5, real], dim=1)
    with torch.no_grad():
        alone = backbone(real, None)
        with_padding = backbone(padded, torch.tensor([3]))
    assert torch.allclose(alone, with_padding[:, 3:], atol=1e-5)


def test_explicit_mask_without_padding_equals_the_causal_kernel():
    backbone = make_backbone("learned")
    x = torch.randn(2, 9, 16)
    with torch.no_grad():
        assert torch.allclose(backbone(x, None), backbone(x, torch.zeros(2, dtype=torch.int64)), atol=1e-5)
