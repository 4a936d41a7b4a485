"""The infer config: fields, defaults, command-line overrides and the combinations it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_yaml

from sequifier.config.errors import UserError
from sequifier.config.infer import load_infer_config, metadata_path_of_preprocessing, notices

MINIMAL = {"model_path": "models/m.onnx", "data_path": "data/split.parquet"}


def _load(tmp_path: Path, **fields):
    overrides = {k: fields.pop(k) for k in ("seed", "randomize") if k in fields}
    return load_infer_config(write_yaml(tmp_path / "infer.yaml", {**MINIMAL, **fields}), **overrides)


def test_defaults(tmp_path: Path):
    config = _load(tmp_path)
    assert (config.model_type, config.write_format, config.read_format, config.decode_categories) == (
        "generative",
        "csv",
        None,
        True,
    )
    assert (config.output_probabilities, config.infer_with_dropout, config.autoregressive, config.seed) == (
        False,
        False,
        False,
        1010,
    )
    assert config.model_paths == ("models/m.onnx",)


def test_several_models_and_command_line_seeds(tmp_path: Path):
    assert _load(tmp_path, model_path=["a.onnx", "b.pt"]).model_paths == ("a.onnx", "b.pt")
    assert _load(tmp_path, seed=5).seed == 5
    drawn = {_load(tmp_path, randomize=True).seed for _ in range(3)}
    assert len(drawn) > 1
    with pytest.raises(UserError, match="cannot be combined"):
        _load(tmp_path, seed=5, randomize=True)


@pytest.mark.parametrize(
    ("fields", "where", "message"),
    [
        ({"autoregressive": True}, "generation_steps", "required"),
        ({"data_path": None, "metadata_config_path": ""}, "metadata_config_path", "must not be empty"),
        ({"data_path": " "}, "data_path", "must not be empty (leave the field out for its default)"),
        ({"training_config_path": ""}, "training_config_path", "must not be empty"),
        ({"model_path": ["models/m.onnx", ""]}, "model_path", "names an empty path (item 2)"),
        ({"generation_steps": 3}, "generation_steps", "only applies"),
        ({"autoregressive": True, "generation_steps": 0}, "generation_steps", "at least 1"),
        ({"model_type": "embedding", "output_probabilities": True}, "output_probabilities", "generative"),
        ({"model_type": "embedding", "autoregressive": True, "generation_steps": 2}, "autoregressive", "generative"),
        ({"inference_batch_size": 0}, "inference_batch_size", "at least 1"),
        ({"seed": -1}, "seed", "must be from 0 to 2**63-1"),
        ({"seed": 2**63}, "seed", "must be from 0 to 2**63-1"),
        ({"data_path": None}, "data_path", "metadata_config_path"),
        ({"window_stride": 0}, "window_stride", "at least 1"),
        ({"window_stride": 2, "autoregressive": True, "generation_steps": 2}, "window_stride", "single-step"),
        ({"prediction_alignment_steps": 3}, "prediction_alignment_steps", "only 1"),
        ({"device": "tpu"}, "device", "'tpu' is not a device; use cpu, cuda, cuda:N or mps"),
        ({"device": "cuda:x"}, "device", "'cuda:x' is not a device"),
        ({"model_path": None}, "model_path", "required"),
        ({"model_path": 5}, "model_path", "expected a string or a list, got 5"),  # in YAML's words
        ({"model_path": {"a": 1}}, "model_path", "expected a string or a list, got a mapping"),
        ({"model_type": "generator"}, "model_type", "not allowed"),
        ({"read_format": "feather"}, "read_format", "not allowed"),
        ({"contex_length": 4}, "contex_length", "context_length"),
    ],
)
def test_refused_combinations_name_the_field(tmp_path: Path, fields: dict, where: str, message: str):
    with pytest.raises(UserError) as caught:
        _load(tmp_path, **fields)
    assert where in str(caught.value) and message in str(caught.value)


def test_fields_without_an_effect_are_accepted_with_a_notice(tmp_path: Path):
    config = _load(tmp_path, deterministic=True, dataset="events", part="original")
    assert notices(config) == [
        "deterministic: ignored; inference here gives the same results for the same seed (with infer_with_dropout, "
        "for the same seed and inference_batch_size)",
        "dataset: ignored; it selects a part of training_config_path, which is not set",
        "part: ignored; it selects a part of training_config_path, which is not set",
    ]
    assert notices(_load(tmp_path)) == []


def test_preprocessing_data_path_names_the_metadata_preprocess_wrote(tmp_path: Path):
    config = _load(tmp_path, data_path=None, preprocessing_data_path="data/events.csv")
    expected = tmp_path / "configs" / "metadata_configs" / "events.json"
    assert metadata_path_of_preprocessing(tmp_path, config.preprocessing_data_path) == expected
    (tmp_path / "data" / "raw.d").mkdir(parents=True)
    assert metadata_path_of_preprocessing(tmp_path, "data/raw.d").name == "raw.d.json"


def test_additional_config_paths_are_merged_and_may_not_overlap(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_yaml(tmp_path / "configs" / "runtime.yaml", {"device": "cpu", "inference_batch_size": 4})
    config = _load(tmp_path, additional_config_paths=["configs/runtime.yaml"])
    assert (config.device, config.inference_batch_size) == ("cpu", 4)
    with pytest.raises(UserError, match="inference_batch_size: is set by both"):
        _load(tmp_path, additional_config_paths=["configs/runtime.yaml"], inference_batch_size=8)


def test_the_training_config_route_asks_for_a_part_when_the_dataset_has_several():
    from sequifier.infer.route import _pick

    with pytest.raises(UserError, match=r"part: train.yaml dataset 'main' has parts \['a', 'b'\]; choose one"):
        _pick(None, ["a", "b"], "part", "train.yaml dataset 'main'")
    assert _pick(None, ["only"], "part", "train.yaml dataset 'main'") == "only"
