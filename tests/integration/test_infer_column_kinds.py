"""Metadata that makes a model's categorical column real (the data preprocessed again with the column's values
as numbers) is refused naming the change of kind, not the size of an id map."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infer_helpers import GENERATIVE, METADATA, SPLIT, export_all, infer

from sequifier.config.errors import UserError


def test_a_categorical_column_turned_real_is_named_as_such(tmp_path: Path):
    export_all(tmp_path)
    metadata = json.loads(METADATA.read_text())
    del metadata["id_maps"]["event"], metadata["n_classes"]["event"]
    metadata["column_data_types"]["event"] = "Float64"
    metadata["selected_columns_statistics"]["event"] = {"mean": 7.0, "std": 3.0}
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(metadata))
    with pytest.raises(UserError) as refused:
        infer(tmp_path, GENERATIVE, SPLIT, metadata_config_path=str(changed))
    assert refused.value.where == "column_data_types.event"
    assert "a real column (Float64)" in refused.value.problem and "as a categorical one" in refused.value.problem


def test_an_id_map_without_its_reserved_entries_means_what_the_models_map_means(tmp_path: Path):
    """Maps of integer columns leave `[unknown]` and `[other]` out, as 3.x writes them; their ids are fixed, so such a
    map of the model's values is the model's map, and a map of other values is still refused."""
    export_all(tmp_path)
    metadata = json.loads(METADATA.read_text())
    metadata["id_maps"]["event"] = {k: v for k, v in metadata["id_maps"]["event"].items() if not k.startswith("[")}
    without_reserved = tmp_path / "without-reserved.json"
    without_reserved.write_text(json.dumps(metadata))
    predictions = infer(tmp_path, GENERATIVE, SPLIT, metadata_config_path=str(without_reserved))
    assert predictions and all(path.is_file() for path in predictions)
    metadata["id_maps"]["event"].popitem()
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps(metadata))
    with pytest.raises(UserError) as refused:
        infer(tmp_path, GENERATIVE, SPLIT, metadata_config_path=str(fewer))
    assert refused.value.where == "id_maps.event"
    assert "maps 11 values" in refused.value.problem and "a different map of 12 values" in refused.value.problem
