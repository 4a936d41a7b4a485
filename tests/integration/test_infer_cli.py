"""`sequifier infer` as a user runs it: an ONNX file alone in an empty folder, the flags and infer.yaml files of 3.x."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnxruntime
import pyarrow.csv as pacsv
import pytest
from conftest import REFERENCE_DIR, run_sequifier, write_yaml
from infer_helpers import BUNDLE, EMBEDDING, GENERATIVE, SPLIT, export_all


def test_an_onnx_file_alone_infers_with_model_path_data_path_and_model_type(tmp_path: Path):
    export_all(tmp_path / "training")
    user = tmp_path / "user"
    user.mkdir()
    for model in (GENERATIVE, EMBEDDING):
        shutil.copy(tmp_path / "training" / "models" / model, user / model)
    shutil.copy(SPLIT, user / "windows.parquet")
    write_yaml(
        user / "generate.yaml", {"model_path": GENERATIVE, "data_path": "windows.parquet", "model_type": "generative"}
    )
    write_yaml(
        user / "embed.yaml", {"model_path": EMBEDDING, "data_path": "windows.parquet", "model_type": "embedding"}
    )
    runs = (("generate.yaml", "predictions", GENERATIVE, 6), ("embed.yaml", "embeddings", EMBEDDING, 4 + 16))
    for config, kind, model, width in runs:
        result = run_sequifier(["infer", "--config-path", config, "--seed", "3"], user)
        assert result.returncode == 0, result.stderr
        table = pacsv.read_csv(user / "outputs" / kind / Path(model).stem / "part-000.csv")
        assert table.num_columns == width and table.num_rows > 0
        assert table.column_names[:4] == ["sequenceId", "subsequenceId", "windowStartOffset", "itemPosition"]

    result = run_sequifier(["infer", "--config-path", "generate.yaml", "--seed", "1", "--randomize"], user)
    assert result.returncode == 2 and "not allowed with argument" in result.stderr
    result = run_sequifier(
        ["infer", "--config-path", "generate.yaml", "--randomize", "--model-path", "missing.onnx"], user
    )
    assert result.returncode == 2 and "missing.onnx: model file does not exist" in result.stderr
    assert "drawn by --randomize" in result.stdout
    help_text = run_sequifier(["infer", "--help"], user).stdout
    for flag in ("--config-path", "--data-path", "--model-path", "--seed", "--randomize"):
        assert flag in help_text
    shutil.copytree(REFERENCE_DIR / "data" / "events_pt-split1", user / "shards")
    shard = user / "shards" / "events_pt-split1-0-00.pt"
    result = run_sequifier(["infer", "--config-path", "generate.yaml", "--data-path", str(shard)], user)
    assert result.returncode == 2 and f"{shard} is one PT shard" in result.stderr and str(shard.parent) in result.stderr


AUTOREGRESSIVE = {
    "input_columns": ["event", "amount"],
    "target_columns": ["event", "amount"],
    "ingestion": {"type": "embedding", "output_dim": 16, "feature_embedding_dims": {"event": 8, "amount": 8}},
}


def _scaffolded_by_3x(model: str) -> dict:
    """The infer.yaml `sequifier make` of 3.1.1.0 writes, its placeholders filled in for the reference project."""
    return {
        "project_root": ".",
        "preprocessing_data_path": "data/events.parquet",
        "model_type": "generative",
        "model_path": f"models/{model}",
        "input_columns": ["event", "amount"],
        "target_columns": ["event", "amount"],
        "target_column_types": {"event": "categorical", "amount": "real"},
        "training_objective": "causal",
        "output_probabilities": False,
        "decode_categories": True,
        "device": "cpu",
        "context_length": 8,
        "inference_batch_size": 10,
        "autoregressive": True,
        "generation_steps": 5,
    }


@pytest.fixture(scope="module")
def reference_project(tmp_path_factory) -> Path:
    """A copy of the reference-v3 project with a tiny autoregressive-capable model under models/."""
    project = tmp_path_factory.mktemp("infer-3x") / "project"
    shutil.copytree(REFERENCE_DIR, project)
    export_all(project, interface=AUTOREGRESSIVE)
    return project


def test_an_infer_yaml_written_for_3x_runs_unchanged(reference_project: Path):
    for model in (GENERATIVE, BUNDLE):
        config = _scaffolded_by_3x(model)
        write_yaml(reference_project / "configs" / "infer.yaml", config)
        result = run_sequifier(["infer"], reference_project)
        assert result.returncode == 0, result.stderr
        table = pacsv.read_csv(reference_project / "outputs" / "predictions" / Path(model).stem / "part-000.csv")
        assert table.num_rows == 5 * 120  # generation_steps items after each window of the metadata's last split
        identifiers = ["sequenceId", "subsequenceId", "windowStartOffset", "itemPosition"]
        assert table.column_names == identifiers + ["event", "amount"]

    config = {
        **_scaffolded_by_3x(GENERATIVE),
        "deterministic": True,
        "window_stride": None,
        "prediction_alignment_steps": 1,
        "model_interface": "default",
        "column_data_types": {"event": "Int64", "amount": "Float64", "delay": "Float64"},
        "additional_config_paths": ["configs/output.yaml"],
    }
    del config["output_probabilities"]
    write_yaml(reference_project / "configs" / "output.yaml", {"output_probabilities": True})
    write_yaml(reference_project / "configs" / "infer.yaml", config)
    result = run_sequifier(["infer"], reference_project)
    assert result.returncode == 0, result.stderr
    assert "deterministic: ignored" in result.stdout
    assert (reference_project / "outputs" / "probabilities" / "tiny-last-1" / "event" / "part-000.csv").is_file()


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("context_length", 16, "context_length: config says 16, but tiny-last-1.onnx was exported with 8"),
        (
            "training_objective",
            "masked",
            "training_objective: config says 'masked', but tiny-last-1.onnx was exported with 'causal'",
        ),
        (
            "target_column_types",
            {"event": "categorical", "amount": "categorical"},
            "target_column_types: config says {'event': 'categorical', 'amount': 'categorical'}, "
            "but tiny-last-1.onnx was exported with {'event': 'categorical', 'amount': 'real'}",
        ),
    ],
)
def test_a_3x_field_that_contradicts_the_model_exits_2_with_both_values_in_one_line(
    reference_project: Path, field: str, value, shown: str
):
    write_yaml(reference_project / "configs" / "infer.yaml", {**_scaffolded_by_3x(GENERATIVE), field: value})
    result = run_sequifier(["infer"], reference_project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {shown}"]


@pytest.mark.skipif(
    "CUDAExecutionProvider" in onnxruntime.get_available_providers(), reason="this onnxruntime runs on CUDA"
)
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_device_cuda_without_a_cuda_runtime_is_a_clear_error(reference_project: Path, device: str):
    write_yaml(reference_project / "configs" / "infer.yaml", {**_scaffolded_by_3x(GENERATIVE), "device": device})
    result = run_sequifier(["infer"], reference_project)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: device: is '{device}', but this onnxruntime offers only")
    assert "onnxruntime-gpu" in result.stderr
