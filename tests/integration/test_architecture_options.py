"""Every architecture option trains and exports to ONNX that matches torch (<= 1e-4); one trains from the CLI.

The options train in this process: the overrides compose as the command line's do, and a fresh interpreter per
option would only repeat torch's start-up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import run_sequifier, tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config, compose_config
from sequifier.config.resolve import resolve
from sequifier.data.stored import load_split
from sequifier.export.onnx import export_onnx
from sequifier.infer.onnx_model import OnnxModel
from sequifier.infer.runner import model_inputs
from sequifier.model.network import build_network
from sequifier.training.engine import Trainer

ARCH = "model.backbone.architecture"
OPTIONS = {
    "gqa": [f"{ARCH}.attention.type=gqa", f"{ARCH}.attention.n_kv_heads=1"],
    "mqa": [f"{ARCH}.attention.type=mqa"],
    "no_output_projection": [f"{ARCH}.attention.output_projection=false"],
    "geglu": [f"{ARCH}.feed_forward.activation=geglu"],
    "gelu": [f"{ARCH}.feed_forward.activation=gelu"],
    "relu": [f"{ARCH}.feed_forward.activation=relu"],
    "silu": [f"{ARCH}.feed_forward.activation=silu"],
    "layernorm": [f"{ARCH}.normalization.type=layer_norm"],
    "post_norm": [f"{ARCH}.normalization.norm_first=false"],
    "learned_positions": [f"{ARCH}.position_encoding.type=learned"],
    "sinusoidal_positions": [f"{ARCH}.position_encoding.type=sinusoidal"],
    "shared_layers": [f"{ARCH}.shared_layer_groups=[[0,1]]"],
    "mlp_decoder": ["model.interface.decoder.type=mlp", "+model.interface.decoder.hidden_dims=[24]"],
    "composite_ingestion": [
        "~model.interface.ingestion",
        "+model.interface.ingestion={type:composite,branches:{cat:{columns:[event,channel],output_dim:8},"
        "num:{columns:[amount],output_dim:4}},merge:{type:sum}}",
    ],
    "initialization": [
        "model.backbone.initialization_seed=5",
        "model.backbone.initialization={attention.qkv:{weight:{method:xavier_normal}}}",
    ],
    **{
        f"{merge}_merge": [
            "~model.interface.ingestion",
            "+model.interface.ingestion={type:composite,branches:{cat:{columns:[event,channel],output_dim:8},"
            f"num:{{columns:[amount],output_dim:4}},both:{{type:composite,output_dim:6,merge:{{type:{merge}}},"
            "branches:{e:{columns:[event],output_dim:6},a:{columns:[amount],output_dim:3}}}},"
            f"allow_shared_columns:true,merge:{{type:{merge}}}}}",
        ]
        for merge in ("gated", "attention")
    },
    "decoder_support": ["model.interface.decoder.support=3", "model.interface.decoder.prediction_length=2"],
    "mlp_decoder_3x_fields": [
        "model.interface.decoder.type=mlp",
        "model.interface.decoder.support=2",
        "+model.interface.decoder.hidden_dims=[24,12]",
        "+model.interface.decoder.activation=gelu",
        "+model.interface.decoder.dropout=0.1",
        "+model.interface.decoder.hidden_weight_l2=0.01",
    ],
}


FROM_THE_CLI = "composite_ingestion"  # `~` and `+` overrides through the command line


@pytest.mark.parametrize("option", OPTIONS)
def test_option_trains_and_exports_matching_onnx(reference_project: Path, tmp_path: Path, option: str):
    config = tiny_train_config(evaluation=False)
    config["model"]["backbone"]["architecture"]["num_layers"] = 2
    config_file = write_yaml(reference_project / "configs" / "train.yaml", config)
    overrides = OPTIONS[option]
    spec = resolve(canonical_config(compose_config(config_file, overrides)), run_dir=tmp_path, cwd=reference_project)
    if option == FROM_THE_CLI:
        result = run_sequifier(["train", *overrides], reference_project)
        assert result.returncode == 0, result.stderr
        assert "(no validation: add an `evaluation` section" in result.stdout  # not "removed or emptied"
    else:
        Trainer(spec).run()
    assert (reference_project / "models" / "tiny-last-1.onnx").is_file()

    torch.manual_seed(0)
    network = build_network(spec.network).eval()
    export_onnx(network, spec, tmp_path / "model.onnx")
    model = OnnxModel(tmp_path / "model.onnx")
    categorical = {n for n, c in spec.interface_columns.items() if c.kind == "categorical"}
    stored = load_split(
        reference_project / "data" / "events-split1.parquet", list(spec.interface.input_columns), categorical
    )
    inputs, padding = model_inputs(stored.columns, stored.left_pad_lengths, model.contract)
    onnx_outputs = model(inputs, padding)
    with torch.no_grad():
        torch_outputs = network(
            spec.interface_name, {k: torch.from_numpy(v) for k, v in inputs.items()}, torch.from_numpy(padding)
        )
    predicted = spec.interface.decoder.prediction_length
    for target in spec.interface.target_columns:
        assert onnx_outputs[target].shape[1] == predicted
        assert np.abs(onnx_outputs[target] - torch_outputs[target][:, -predicted:].numpy()).max() <= 1e-4
