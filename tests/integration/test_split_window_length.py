"""A split whose windows are not as long as its metadata says (written by another preprocess run) is refused by
train and by infer, naming the split, both lengths and the metadata file."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import run_sequifier, tiny_train_config, write_yaml
from infer_helpers import GENERATIVE, METADATA, SPLIT, export_all, infer
from reference_helpers import preprocess_reference

from sequifier.config.errors import UserError
from sequifier.data.stored_tables import WINDOW_LENGTH_KEY


def shortened(split: Path, into: Path) -> Path:
    """The split's windows one item shorter, as a preprocess run of window_length - 1 writes them."""
    table = pq.read_table(split)
    width = sum(name.isdigit() for name in table.column_names)
    table = table.drop_columns([str(width - 1)]).replace_schema_metadata({WINDOW_LENGTH_KEY: str(width - 1).encode()})
    pq.write_table(table, into)
    return into


def test_train_refuses_a_split_shorter_than_its_metadata_says(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    split = reference_project / "data" / "events-split0.parquet"
    shortened(split, split)
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 2, result.stderr
    assert f"error: {split}: holds windows of 16 items, but" in result.stderr
    assert "events.json describes windows of 17" in result.stderr and "Traceback" not in result.stderr


def test_infer_refuses_a_split_shorter_than_its_metadata_says(tmp_path: Path):
    export_all(tmp_path)
    split = shortened(SPLIT, tmp_path / "split.parquet")
    with pytest.raises(UserError) as refused:
        infer(tmp_path, GENERATIVE, split, metadata_config_path=str(METADATA))
    assert refused.value.where == str(split) and "describes windows of 17" in refused.value.problem


def test_infer_reads_longer_windows_preprocessed_with_the_training_metadata(tmp_path: Path, monkeypatch):
    export_all(tmp_path / "project")
    preprocess_reference(tmp_path / "new", monkeypatch, metadata_config_path=str(METADATA), window_length=21)
    split = tmp_path / "new" / "data" / "events-split2.parquet"
    assert sum(name.isdigit() for name in pq.read_table(split).column_names) == 21
    assert infer(tmp_path / "project", GENERATIVE, split, metadata_config_path=str(METADATA))
