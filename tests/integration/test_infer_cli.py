"""`sequifier infer` as a user runs it: an ONNX file copied alone into an empty folder, and the infer flags."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.csv as pacsv

from conftest import run_sequifier, write_yaml
from infer_helpers import EMBEDDING, GENERATIVE, SPLIT, export_all


def test_an_onnx_file_alone_infers_with_model_path_data_path_and_model_type(tmp_path: Path):
    export_all(tmp_path / "training")
    user = tmp_path / "user"
    user.mkdir()
    for model in (GENERATIVE, EMBEDDING):
        shutil.copy(tmp_path / "training" / "models" / model, user / model)
    shutil.copy(SPLIT, user / "windows.parquet")
    write_yaml(user / "generate.yaml", {"model_path": GENERATIVE, "data_path": "windows.parquet", "model_type": "generative"})
    write_yaml(user / "embed.yaml", {"model_path": EMBEDDING, "data_path": "windows.parquet", "model_type": "embedding"})
    for config, kind, model, width in (("generate.yaml", "predictions", GENERATIVE, 5), ("embed.yaml", "embeddings", EMBEDDING, 3 + 16)):
        result = run_sequifier(["infer", "--config-path", config, "--seed", "3"], user)
        assert result.returncode == 0, result.stderr
        table = pacsv.read_csv(user / "outputs" / kind / Path(model).stem / "part-000.csv")
        assert table.num_columns == width and table.num_rows > 0
        assert table.column_names[:3] == ["sequenceId", "subsequenceId", "itemPosition"]

    result = run_sequifier(["infer", "--config-path", "generate.yaml", "--seed", "1", "--randomize"], user)
    assert result.returncode == 2 and "not allowed with argument" in result.stderr
    result = run_sequifier(["infer", "--config-path", "generate.yaml", "--randomize", "--model-path", "missing.onnx"], user)
    assert result.returncode == 2 and "missing.onnx: model file does not exist" in result.stderr
    assert "drawn by --randomize" in result.stdout
    help_text = run_sequifier(["infer", "--help"], user).stdout
    for flag in ("--config-path", "--data-path", "--model-path", "--seed", "--randomize"):
        assert flag in help_text
