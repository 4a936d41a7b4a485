"""Rotary position encoding: the training Function matches the plain rotation in values, gradients and dtypes."""

from __future__ import annotations

import io

import pytest
import torch

from sequifier.model import positions
from sequifier.model.attention import SelfAttention
from sequifier.model.positions import RotaryEmbedding, RotationFunction

HEAD_DIM, LENGTH = 8, 12


def projection_view(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """A leaf like the qkv projection's output and its strided queries-and-keys view [batch, time, 3, head_dim]."""
    torch.manual_seed(0)
    leaf = torch.randn(2, LENGTH, 5, HEAD_DIM, dtype=dtype, requires_grad=True)
    return leaf, leaf[:, :, :3]


def complex_rotation(x: torch.Tensor, rotary: RotaryEmbedding) -> torch.Tensor:
    """The half-split rotation as a complex product, independent of the module's arithmetic."""
    first, second = x.double().chunk(2, dim=-1)
    turns = torch.complex(rotary.cos[: x.shape[1], None].double(), rotary.sin[: x.shape[1], None].double())
    turned = torch.complex(first, second) * turns
    return torch.cat((turned.real, turned.imag), dim=-1)


def forbid_function(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args):
        raise AssertionError("the plain rotation was expected here")

    monkeypatch.setattr(RotationFunction, "apply", refuse)


def test_training_rotation_uses_the_function_and_equals_the_plain_rotation():
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    leaf, x = projection_view()
    trained = rotary(x)
    with torch.no_grad():
        plain = rotary(x)
    assert type(trained.grad_fn).__name__ == "RotationFunctionBackward"
    assert trained.is_contiguous() and trained.shape == x.shape
    torch.testing.assert_close(trained, plain, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(trained.double(), complex_rotation(x, rotary), rtol=1e-6, atol=1e-6)


def test_function_gradient_equals_the_gradient_of_the_rotation(monkeypatch):
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    leaf, x = projection_view()
    upstream = torch.randn(x.shape)
    (through_function,) = torch.autograd.grad(rotary(x), leaf, upstream)
    (through_reference,) = torch.autograd.grad(complex_rotation(x, rotary), leaf, upstream.double())
    monkeypatch.setattr(positions, "records_rotation_backward", lambda x: False)
    (through_plain,) = torch.autograd.grad(rotary(x), leaf, upstream)
    assert through_function[:, :, 3:].eq(0).all()
    torch.testing.assert_close(through_function, through_reference, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(through_function, through_plain, rtol=1e-6, atol=1e-6)


def test_function_passes_gradcheck_in_float64():
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    x = torch.randn(2, 5, 5, HEAD_DIM, dtype=torch.float64, requires_grad=True)[:, :, 1:4]
    cos, sin = rotary.cos[:5, None].double(), rotary.sin[:5, None].double()
    assert torch.autograd.gradcheck(RotationFunction.apply, (x, cos, sin))


def test_function_keeps_no_activations_for_backward():
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    leaf, x = projection_view()
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        rotary(x)
    assert saved == []


def test_bf16_input_gives_the_plain_rotations_dtypes_and_values():
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    leaf, x = projection_view(torch.bfloat16)
    trained = rotary(x)
    with torch.no_grad():
        plain = rotary(x)
    assert trained.dtype == plain.dtype
    torch.testing.assert_close(trained, plain, rtol=1e-6, atol=1e-6)
    upstream = torch.randn(x.shape)
    (gradient,) = torch.autograd.grad(trained, leaf, upstream)
    (reference,) = torch.autograd.grad(complex_rotation(x, rotary), leaf, upstream.double())
    assert gradient.dtype == torch.bfloat16
    torch.testing.assert_close(gradient, reference, rtol=1e-2, atol=1e-2)


def test_rotation_under_autocast_trains_in_the_plain_rotations_dtype():
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    projection = torch.nn.Linear(16, 5 * HEAD_DIM, bias=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x = projection(torch.randn(2, LENGTH, 16)).view(2, LENGTH, 5, HEAD_DIM)[:, :, :3]
        trained = rotary(x)
        with torch.no_grad():
            plain = rotary(x)
    assert trained.dtype == plain.dtype
    trained.square().sum().backward()
    assert projection.weight.grad is not None and projection.weight.grad.isfinite().all()


def test_plain_rotation_without_autograd(monkeypatch):
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    leaf, x = projection_view()
    forbid_function(monkeypatch)
    with torch.no_grad():
        rotary(x)
    rotary(x.detach())


@pytest.mark.parametrize("tracer", ["onnx_export", "compile"])
def test_plain_rotation_while_traced(monkeypatch, tracer):
    rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)
    leaf, x = projection_view()
    if tracer == "onnx_export":
        monkeypatch.setattr(positions.torch.onnx, "is_in_onnx_export", lambda: True)
    else:
        monkeypatch.setattr(positions.torch.compiler, "is_compiling", lambda: True)
    forbid_function(monkeypatch)
    assert type(rotary(x).grad_fn).__name__ == "CatBackward0"


class ProjectedRotation(torch.nn.Module):
    """A projection whose strided output is rotated, as in attention: grad is on and the input requires it."""

    def __init__(self):
        super().__init__()
        self.projection = torch.nn.Linear(16, 5 * HEAD_DIM, bias=False)
        self.rotary = RotaryEmbedding(HEAD_DIM, 32, 10000.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rotary(self.projection(x).view(*x.shape[:2], 5, HEAD_DIM)[:, :, :3])


@pytest.mark.parametrize("mode", [torch.onnx.TrainingMode.EVAL, torch.onnx.TrainingMode.TRAINING])
def test_onnx_export_records_the_plain_rotation(monkeypatch, mode):
    forbid_function(monkeypatch)
    torch.onnx.export(ProjectedRotation(), (torch.randn(2, LENGTH, 16),), io.BytesIO(), dynamo=False, training=mode)


@pytest.mark.parametrize("training", [True, False])
def test_attention_with_bf16_parameters_and_rope_computes_in_bf16_without_autocast(training):
    """FSDP's bf16 compute (layer_autocast) gives the layers bf16 parameters and inputs, with no autocast."""
    torch.manual_seed(0)
    attention = SelfAttention(32, 4, 4, True, 0.1, RotaryEmbedding(8, 16, 10000.0)).train(training)
    for parameter in attention.parameters():  # as FSDP casts them: parameters only, the rotation's tables stay float32
        parameter.data = parameter.data.to(torch.bfloat16)
    x = torch.randn(2, 16, 32, dtype=torch.bfloat16, requires_grad=True)
    out = attention(x, None)
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()
    if training:
        out.float().sum().backward()
        assert x.grad is not None and x.grad.dtype == torch.bfloat16
