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
