"""The gated feed-forward's lean autograd Function: same values and gradients as the plain expression (with its dropout
after the activation, as in 3.x), less kept."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sequifier.model.layers import FeedForward

ACTIVATIONS = {"swiglu": F.silu, "geglu": F.gelu}


def plain(module: FeedForward, x: torch.Tensor, activation: str) -> torch.Tensor:
    gate, value = module.up(x).chunk(2, dim=-1)
    return module.down(module.dropout(ACTIVATIONS[activation](gate) * value))


def took_the_lean_path(output: torch.Tensor) -> bool:
    return type(output.grad_fn).__name__ == "_GatedDownBackward"


def gradients(module: FeedForward, x: torch.Tensor, output: torch.Tensor, upstream: torch.Tensor) -> list:
    inputs = [x, *module.parameters()]
    return list(torch.autograd.grad(output, inputs, upstream))


def saved_bytes(step) -> int:
    """Bytes of the distinct storages that autograd keeps for backward while `step` records."""
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        step()
    return sum(storages.values())


@pytest.mark.parametrize("activation", ["swiglu", "geglu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_and_gradients_equal_the_plain_expression(activation, dtype):
    torch.manual_seed(0)
    module = FeedForward(16, 24, activation, 0.0).to(dtype)
    x = torch.randn(3, 7, 16, dtype=dtype, requires_grad=True)
    fused = module(x)
    reference = plain(module, x, activation)
    upstream = torch.randn_like(fused)
    assert took_the_lean_path(fused) and not took_the_lean_path(reference)
    torch.testing.assert_close(fused, reference)
    for got, expected in zip(gradients(module, x, fused, upstream), gradients(module, x, reference, upstream)):
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("activation", ["swiglu", "geglu"])
def test_dropout_after_the_activation_equals_the_plain_expression_with_the_same_mask(activation):
    torch.manual_seed(0)
    module = FeedForward(16, 24, activation, 0.3)
    x = torch.randn(3, 7, 16, requires_grad=True)
    torch.manual_seed(5)
    fused = module(x)
    torch.manual_seed(5)
    reference = plain(module, x, activation)
    gate, value = module.up(x).chunk(2, dim=-1)
    undropped = module.down(ACTIVATIONS[activation](gate) * value)
    assert took_the_lean_path(fused) and not took_the_lean_path(reference)
    torch.testing.assert_close(fused, reference)
    assert not torch.allclose(fused, undropped)
    upstream = torch.randn_like(fused)
    for got, expected in zip(gradients(module, x, fused, upstream), gradients(module, x, reference, upstream)):
        torch.testing.assert_close(got, expected)
    module.eval()
    torch.testing.assert_close(module(x), undropped)


@pytest.mark.parametrize("dropout", [0.0, 0.4])
@pytest.mark.parametrize("activation", ["swiglu", "geglu"])
def test_gradcheck_in_float64(activation, dropout):
    torch.manual_seed(0)
    module = FeedForward(4, 3, activation, dropout).double()
    names = [name for name, _ in module.named_parameters()]

    def function(x, *parameters):
        torch.manual_seed(1)  # the same dropout mask in every evaluation
        output = torch.func.functional_call(module, dict(zip(names, parameters)), (x,))
        assert took_the_lean_path(output)
        return output

    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    parameters = [p.detach().clone().requires_grad_() for p in module.parameters()]
    assert torch.autograd.gradcheck(function, (x, *parameters))


def test_keeps_less_for_backward_than_the_plain_expression():
    torch.manual_seed(0)
    module = FeedForward(32, 64, "swiglu", 0.0)
    x = torch.randn(4, 16, 32, requires_grad=True)
    fused = saved_bytes(lambda: module(x))
    reference = saved_bytes(lambda: plain(module, x, "swiglu"))
    up_output = 4 * 16 * 2 * 64 * 4
    assert fused < reference
    assert reference - fused >= up_output  # act(gate) and the product, each half the up output, are not kept


def test_frozen_up_projection_still_trains_the_down_projection():
    torch.manual_seed(0)
    module = FeedForward(8, 12, "swiglu", 0.0)
    module.up.requires_grad_(False)
    x = torch.randn(5, 8)
    fused, reference = module(x), plain(module, x, "swiglu")
    upstream = torch.randn_like(fused)
    assert took_the_lean_path(fused)
    down = list(module.down.parameters())
    for got, expected in zip(
        torch.autograd.grad(fused, down, upstream), torch.autograd.grad(reference, down, upstream)
    ):
        torch.testing.assert_close(got, expected)


def test_without_recording_the_plain_expression_runs():
    module = FeedForward(8, 12, "geglu", 0.0)
    x = torch.randn(5, 8)
    with torch.no_grad():
        assert saved_bytes(lambda: module(x)) == 0
        torch.testing.assert_close(module(x), plain(module, x, "geglu"))
    module.eval()
    with torch.inference_mode():
        torch.testing.assert_close(module(x), plain(module, x, "geglu"))


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_under_autocast_the_function_computes_the_plain_expression_in_bf16(dropout):
    torch.manual_seed(0)
    module = FeedForward(16, 24, "swiglu", dropout)
    x = torch.randn(3, 7, 16, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.manual_seed(5)
        fused = module(x)
        torch.manual_seed(5)
        reference = plain(module, x, "swiglu")
    assert fused.dtype == reference.dtype == torch.bfloat16
    assert took_the_lean_path(fused) and not took_the_lean_path(reference)
    torch.testing.assert_close(fused, reference)
    upstream = torch.randn_like(fused)
    for got, expected in zip(gradients(module, x, fused, upstream), gradients(module, x, reference, upstream)):
        assert got.dtype == expected.dtype == torch.float32
        torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert saved_bytes(lambda: module(x)) < saved_bytes(lambda: plain(module, x, "swiglu"))


def test_bfloat16_parameters_give_the_plain_expression_results():
    torch.manual_seed(0)
    module = FeedForward(16, 24, "swiglu", 0.0).to(torch.bfloat16)
    x = torch.randn(3, 7, 16, dtype=torch.bfloat16, requires_grad=True)
    fused, reference = module(x), plain(module, x, "swiglu")
    upstream = torch.randn_like(fused)
    assert fused.dtype == torch.bfloat16 and took_the_lean_path(fused)
    torch.testing.assert_close(fused, reference)
    for got, expected in zip(gradients(module, x, fused, upstream), gradients(module, x, reference, upstream)):
        assert got.dtype == torch.bfloat16
        torch.testing.assert_close(got, expected)


def test_parameters_keep_their_names_and_shapes():
    state = FeedForward(16, 24, "swiglu", 0.0).state_dict()
    assert {name: tuple(t.shape) for name, t in state.items()} == {
        "up.weight": (48, 16),
        "up.bias": (48,),
        "down.weight": (16, 24),
        "down.bias": (16,),
    }
