"""The infer config: fields, defaults, command-line overrides and the combinations it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_yaml
from sequifier.config.errors import UserError
from sequifier.config.infer import load_infer_config

MINIMAL = {"model_path": "models/m.onnx", "data_path": "data/split.parquet"}


def _load(tmp_path: Path, **fields):
    overrides = {k: fields.pop(k) for k in ("seed", "randomize") if k in fields}
    return load_infer_config(write_yaml(tmp_path / "infer.yaml", {**MINIMAL, **fields}), **overrides)


def test_defaults(tmp_path: Path):
    config = _load(tmp_path)
    assert (config.model_type, config.write_format, config.read_format, config.decode_categories) == ("generative", "csv", None, True)
    assert (config.output_probabilities, config.infer_with_dropout, config.autoregressive, config.seed) == (False, False, False, 1010)
    assert config.model_paths == ("models/m.onnx",)


def test_several_models_and_command_line_seeds(tmp_path: Path):
    assert _load(tmp_path, model_path=["a.onnx", "b.pt"]).model_paths == ("a.onnx", "b.pt")
    assert _load(tmp_path, seed=5).seed == 5
    drawn = {_load(tmp_path, randomize=True).seed for _ in range(3)}
    assert len(drawn) > 1
    with pytest.raises(UserError, match="cannot be combined"):
        _load(tmp_path, seed=5, randomize=True)


@pytest.mark.parametrize(("fields", "where", "message"), [
    ({"autoregressive": True}, "generation_steps", "required"),
    ({"generation_steps": 3}, "generation_steps", "only applies"),
    ({"autoregressive": True, "generation_steps": 0}, "generation_steps", "at least 1"),
    ({"model_type": "embedding", "output_probabilities": True}, "output_probabilities", "generative"),
    ({"model_type": "embedding", "autoregressive": True, "generation_steps": 2}, "autoregressive", "generative"),
    ({"inference_batch_size": 0}, "inference_batch_size", "at least 1"),
    ({"dataset": "x"}, "dataset", "training_config_path"),
    ({"data_path": None}, "data_path", "metadata_config_path"),
    ({"model_path": None}, "model_path", "required"),
    ({"model_type": "generator"}, "model_type", "not allowed"),
    ({"read_format": "feather"}, "read_format", "not allowed"),
    ({"contex_length": 4}, "contex_length", "context_length"),
])
def test_refused_combinations_name_the_field(tmp_path: Path, fields: dict, where: str, message: str):
    with pytest.raises(UserError) as caught:
        _load(tmp_path, **fields)
    assert where in str(caught.value) and message in str(caught.value)
