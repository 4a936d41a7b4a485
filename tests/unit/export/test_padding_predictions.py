"""A position whose context holds only left padding predicts the target's prior, in torch and in ONNX."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from export_test_helpers import example_batch, tiny_network, tiny_spec

from sequifier.export.onnx import export_onnx
from sequifier.infer.onnx_model import OnnxModel


def test_padded_positions_output_the_prior_in_torch_and_onnx(tmp_path: Path):
    spec = tiny_spec(tmp_path, decoder={"prediction_length": 8})
    network = tiny_network(spec)
    decoder = network.interfaces[spec.interface_name].decoder
    decoder.prior("event").copy_(torch.linspace(-3.0, -1.0, decoder.prior("event").numel()))
    decoder.prior("amount").fill_(0.25)
    inputs, padding = example_batch(spec)
    with torch.no_grad():
        outputs = network(spec.interface_name, inputs, padding)
    export_onnx(network, spec, tmp_path / "model.onnx")
    onnx_outputs = OnnxModel(tmp_path / "model.onnx")({k: v.numpy() for k, v in inputs.items()}, padding.numpy())
    assert int(padding.max()) > 0
    for row, pad in enumerate(padding.tolist()):
        for target in ("event", "amount"):
            expected = decoder.prior(target).expand_as(outputs[target][row, :pad])
            torch.testing.assert_close(outputs[target][row, :pad], expected)
            np.testing.assert_allclose(onnx_outputs[target][row, :pad], expected.numpy(), atol=1e-6)
            assert not torch.allclose(outputs[target][row, pad], decoder.prior(target))
