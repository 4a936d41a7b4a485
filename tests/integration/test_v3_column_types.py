"""Metadata of 3.x's `column_data_types` option (ids as any integer type, reals as any float type, either case)
trains and infers as the types this release writes do."""

from __future__ import annotations

import json

import pytest
from conftest import REFERENCE_DIR, tiny_train_config, write_yaml
from run_helpers import project_with, train_here

from sequifier import cli
from sequifier.config.errors import UserError
from sequifier.data.metadata import metadata_from_dict, read_metadata

THREE_X_TYPES = {"event": "Int32", "channel": "uint8", "amount": "Float32", "delay": "Float16"}


def test_metadata_of_3x_integer_and_float_types_trains_and_infers(tmp_path, monkeypatch):
    project = project_with(tmp_path, "project", tiny_train_config())
    path = project / "configs" / "metadata_configs" / "events.json"
    metadata = json.loads(path.read_text())
    metadata["column_data_types"] = THREE_X_TYPES
    path.write_text(json.dumps(metadata))
    read = read_metadata(path)
    assert read.categorical_columns == ["event", "channel"] and read.real_columns == ["amount", "delay"]

    train_here(project, monkeypatch)
    write_yaml(
        project / "configs" / "infer.yaml",
        {
            "project_root": ".",
            "metadata_config_path": "configs/metadata_configs/events.json",
            "model_path": "models/tiny-best-1.onnx",
            "data_path": "data/events-split2.parquet",
            "read_format": "parquet",
            "write_format": "csv",
        },
    )
    monkeypatch.chdir(project)
    assert cli.main(["infer", "--config-path", "configs/infer.yaml"]) == 0
    (predictions,) = (project / "outputs" / "predictions" / "tiny-best-1").glob("part-*.csv")
    header, first = predictions.read_text().splitlines()[:2]
    assert header.split(",")[-2:] == ['"event"', '"amount"'] and first.split(",")[-2].strip('"').startswith("e")


@pytest.mark.parametrize("written", ["String", "Int128", "float", "Decimal"])
def test_a_type_that_is_no_integer_or_float_type_is_refused_naming_the_allowed_ones(written):
    metadata = json.loads((REFERENCE_DIR / "configs/metadata_configs/events.json").read_text())
    metadata["column_data_types"]["event"] = written
    with pytest.raises(UserError) as error:
        metadata_from_dict(metadata, "events.json")
    assert f"column_data_types['event'] is {written!r}; expected an integer type (Int8, " in error.value.problem
    assert "float type (Float16, Float32, Float64)" in error.value.problem
