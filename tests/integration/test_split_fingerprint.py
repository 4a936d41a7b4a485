"""Merged Parquet splits carry the fingerprint of their metadata's meanings; a split of another run is refused."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REFERENCE_DIR
from infer_helpers import GENERATIVE, METADATA, export_all, infer
from reference_helpers import REFERENCE_PARQUET, preprocess_reference

from sequifier.config.errors import UserError
from sequifier.data.fingerprint import (
    check_same_meanings,
    meanings_fingerprint,
    split_column_kinds,
    split_column_meanings,
    split_fingerprint,
)
from sequifier.data.metadata import read_metadata


def _preprocessed(root: Path, monkeypatch, scale: float = 1.0) -> Path:
    """The reference data preprocessed at `root`, its amounts multiplied by `scale`; the metadata path."""
    table = pq.read_table(REFERENCE_PARQUET)
    amounts = pa.compute.multiply(table.column("amount").cast(pa.float64()), scale)
    changed = root / "input" / REFERENCE_PARQUET.name
    changed.parent.mkdir(parents=True)
    pq.write_table(table.set_column(table.schema.get_field_index("amount"), "amount", amounts), changed)
    return preprocess_reference(root, monkeypatch, data_file=changed)


def test_a_split_carries_the_fingerprint_of_the_metadata_written_with_it(tmp_path, monkeypatch):
    metadata_path = _preprocessed(tmp_path, monkeypatch)
    split = tmp_path / "data" / "events-split0.parquet"
    assert split_fingerprint(split) == meanings_fingerprint(read_metadata(metadata_path))
    check_same_meanings(split, read_metadata(metadata_path), metadata_path)
    assert split_fingerprint(REFERENCE_DIR / "data" / "events-split0.parquet") is None  # 3.x wrote none


def test_a_split_of_another_preprocess_run_is_refused_by_infer(tmp_path, monkeypatch):
    _preprocessed(tmp_path / "other", monkeypatch, scale=3.0)
    split = tmp_path / "other" / "data" / "events-split2.parquet"
    with pytest.raises(UserError) as refused:
        check_same_meanings(split, read_metadata(METADATA), METADATA)
    assert refused.value.where == str(split) and "categories or statistics differ" in refused.value.problem
    export_all(tmp_path / "project")
    with pytest.raises(UserError, match="was written by a preprocess run whose categories or statistics differ"):
        infer(tmp_path / "project", GENERATIVE, data_path=split, metadata_config_path=str(METADATA))


def test_without_metadata_infer_compares_the_splits_column_meanings_with_the_model(tmp_path, monkeypatch):
    export_all(tmp_path / "project")
    _preprocessed(tmp_path / "other", monkeypatch, scale=3.0)
    other = tmp_path / "other" / "data" / "events-split2.parquet"
    with pytest.raises(UserError, match="whose normalization statistics of 'amount' differ from those tiny-last-1"):
        infer(tmp_path / "project", GENERATIVE, data_path=other)
    preprocess_reference(tmp_path / "reused", monkeypatch, metadata_config_path=str(METADATA))
    reused = tmp_path / "reused" / "data" / "events-split2.parquet"
    assert split_column_meanings(reused) is not None
    assert infer(tmp_path / "project", GENERATIVE, data_path=reused)


def test_without_metadata_infer_names_a_column_whose_kind_changed(tmp_path, monkeypatch):
    export_all(tmp_path / "project")
    preprocess_reference(tmp_path / "other", monkeypatch, categorical_columns=["amount"])
    other = tmp_path / "other" / "data" / "events-split2.parquet"
    assert split_column_kinds(other)["amount"] == "categorical"
    with pytest.raises(UserError) as refused:
        infer(tmp_path / "project", GENERATIVE, data_path=other)
    assert refused.value.where == str(other)
    assert refused.value.problem.startswith("holds 'amount' as a categorical column, but tiny-last-1.onnx was trained")
    assert "with 'amount' in real_columns" in refused.value.problem
