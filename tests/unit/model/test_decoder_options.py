"""Decoder support (a sliding window over the backbone states) and the mlp decoder's 3.x fields."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sequifier.config.network import ColumnSpec
from sequifier.model.decoders import Decoder, PenalizedLinear, predictable_class_ids
from sequifier.model.dropout import Dropout

TARGETS = [ColumnSpec("event", "categorical", 6), ColumnSpec("amount", "real")]
CLASS_IDS = {"event": torch.tensor([1, 3, 4, 5])}


def decoder(support: int = 1, **options) -> Decoder:
    torch.manual_seed(0)
    return Decoder(8, TARGETS, CLASS_IDS, prediction_length=2, support=support, **options).eval()


@pytest.mark.parametrize("support", [2, 3])
def test_each_position_reads_the_support_states_up_to_and_including_itself(support):
    module = decoder(support)
    states = torch.randn(3, 10, 8)
    with torch.no_grad():
        outputs = module(states)
        assert outputs["event"].shape == (3, 10 - support + 1, 4) and outputs["amount"].shape == (3, 10 - support + 1)
        for position in range(10 - support + 1):
            window = states[:, position : position + support].reshape(3, support * 8)  # oldest state first
            torch.testing.assert_close(outputs["amount"][:, position], module.heads["amount"](window).squeeze(-1))
        changed = states.clone()
        changed[:, 6] += 1.0  # state 6 is read by the outputs ending at 6 ... 6 + support - 1
        moved = (module(changed)["amount"] - outputs["amount"]).abs() > 0
    ends = torch.arange(support - 1, 10)
    assert moved.all(dim=0).tolist() == ((ends >= 6) & (ends <= 6 + support - 1)).tolist()


def test_the_prior_applies_per_decoded_position():
    module = decoder(3)
    module.prior("amount").fill_(42.0)
    states = torch.randn(2, 6, 8)
    evidence = torch.tensor([[False, False, False, True, True, True], [False, False, True, True, True, True]])
    with torch.no_grad():
        out = module(states, evidence)["amount"]
    assert out.shape == (2, 4)
    assert (out == 42.0).tolist() == [[True, False, False, False], [False, False, False, False]]


def test_an_export_passes_prediction_length_plus_support_minus_one_states():
    assert decoder(1).states_needed == 2 and decoder(3).states_needed == 4


def test_mlp_dropout_follows_each_hidden_activation():
    module = decoder(hidden_dims=(16, 12), activation="gelu", dropout=0.25)
    kinds = [type(m) for m in module.hidden]
    assert kinds == [PenalizedLinear, nn.GELU, Dropout, PenalizedLinear, nn.GELU, Dropout]
    assert all(m.p == 0.25 for m in module.hidden if isinstance(m, Dropout))
    assert [type(m) for m in decoder(hidden_dims=(16,)).hidden] == [PenalizedLinear, nn.ReLU]


def gradients(strength: float) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    module = decoder(hidden_dims=(16, 12), hidden_weight_l2=strength).train()
    states = torch.randn(4, 5, 8, generator=torch.Generator().manual_seed(2))
    loss = sum(out.pow(2).mean() for out in module(states).values())
    loss.backward()
    return {n: p.grad.clone() for n, p in module.named_parameters()}, loss.detach()


def test_hidden_weight_l2_adds_its_gradient_to_the_hidden_weights_only():
    plain, plain_loss = gradients(0.0)
    penalized, penalized_loss = gradients(0.5)
    module = decoder(hidden_dims=(16, 12))
    torch.testing.assert_close(penalized_loss, plain_loss)  # the reported loss leaves the penalty out, as in 3.x
    for name, weight in module.named_parameters():
        expected = plain[name] + (2 * 0.5 * weight.detach() if name.startswith("hidden.") and "weight" in name else 0)
        torch.testing.assert_close(penalized[name], expected, msg=name)


def test_hidden_weight_l2_does_not_change_the_outputs():
    states = torch.randn(2, 4, 8)
    with torch.no_grad():
        penalized = decoder(hidden_dims=(16,), hidden_weight_l2=3.0)(states)
        plain = decoder(hidden_dims=(16,))(states)
    for target in plain:
        torch.testing.assert_close(penalized[target], plain[target], atol=0, rtol=0)


@pytest.mark.parametrize(
    "allowed, expected", [(("other",), [1, 3, 4, 5, 6]), (("mask", "unknown"), [0, 2, 3, 4, 5, 6]), ((), [3, 4, 5, 6])]
)
def test_predictable_ids_are_the_allowed_special_tokens_then_the_data_values(allowed, expected):
    column = ColumnSpec("event", "categorical", n_classes=7)
    assert predictable_class_ids(column, allowed).tolist() == expected
