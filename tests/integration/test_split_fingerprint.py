"""Merged splits carry the fingerprint of their meanings (a CSV split beside it); splits of other runs are refused."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pyarrow_csv
import pyarrow.parquet as pq
import pytest
from conftest import REFERENCE_DIR, run_sequifier, tiny_train_config, write_yaml
from infer_helpers import GENERATIVE, METADATA, export_all, infer
from reference_helpers import REFERENCE_PARQUET, preprocess_reference

from sequifier.config.errors import UserError
from sequifier.data.csv_meanings import meanings_file
from sequifier.data.fingerprint import (
    check_same_meanings,
    meanings_fingerprint,
    split_column_kinds,
    split_column_meanings,
    split_fingerprint,
)
from sequifier.data.metadata import read_metadata
from sequifier.data.stored import load_split


def _preprocessed(root: Path, monkeypatch, scale: float = 1.0, **changes) -> Path:
    """The reference data preprocessed at `root`, its amounts multiplied by `scale`; the metadata path."""
    table = pq.read_table(REFERENCE_PARQUET)
    amounts = pa.compute.multiply(table.column("amount").cast(pa.float64()), scale)
    changed = root / "input" / REFERENCE_PARQUET.name
    changed.parent.mkdir(parents=True)
    pq.write_table(table.set_column(table.schema.get_field_index("amount"), "amount", amounts), changed)
    return preprocess_reference(root, monkeypatch, data_file=changed, **changes)


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


def test_without_metadata_a_split_whose_map_leaves_out_the_reserved_entries_is_the_models_map(tmp_path, monkeypatch):
    """A map of an integer column is written without `[unknown]` and `[other]` (as 3.x writes it); their ids are
    fixed, so a split recording such a map of the model's values is read."""
    export_all(tmp_path / "project")
    metadata = json.loads(METADATA.read_text())
    metadata["id_maps"]["event"] = {k: v for k, v in metadata["id_maps"]["event"].items() if not k.startswith("[")}
    without_reserved = tmp_path / "without-reserved.json"
    without_reserved.write_text(json.dumps(metadata))
    preprocess_reference(tmp_path / "reused", monkeypatch, metadata_config_path=str(without_reserved))
    reused = tmp_path / "reused" / "data" / "events-split2.parquet"
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


def _csv_split_of_another_run(root: Path, monkeypatch) -> Path:
    table = pq.read_table(REFERENCE_PARQUET)
    amounts = pa.compute.multiply(table.column("amount").cast(pa.float64()), 3.0)
    changed = root / "input" / REFERENCE_PARQUET.name
    changed.parent.mkdir(parents=True)
    pq.write_table(table.set_column(table.schema.get_field_index("amount"), "amount", amounts), changed)
    metadata_path = preprocess_reference(root, monkeypatch, data_file=changed, write_format="csv")
    split = root / "data" / "events-split2.csv"
    assert split_fingerprint(split) == meanings_fingerprint(read_metadata(metadata_path))
    return split


def test_a_csv_split_records_its_meanings_beside_it_and_one_of_another_run_is_refused(tmp_path, monkeypatch):
    other = _csv_split_of_another_run(tmp_path / "other", monkeypatch)
    assert meanings_file(other).is_file()
    export_all(tmp_path / "project")
    with pytest.raises(UserError, match="was written by a preprocess run whose categories or statistics differ"):
        infer(tmp_path / "project", GENERATIVE, data_path=other, metadata_config_path=str(METADATA))
    with pytest.raises(UserError, match="whose normalization statistics of 'amount' differ from those tiny-last-1"):
        infer(tmp_path / "project", GENERATIVE, data_path=other)


def test_a_csv_split_rewritten_by_another_writer_is_read_without_its_recorded_meanings(tmp_path, monkeypatch, capsys):
    split = _csv_split_of_another_run(tmp_path, monkeypatch)
    text = split.read_bytes()
    changed = text.replace(b"1", b"2", 1)  # other bytes, the same size
    assert len(changed) == len(text) and changed != text
    split.write_bytes(changed)
    assert split_fingerprint(split) is None and split_column_meanings(split) is None
    noted = capsys.readouterr().err
    assert f"note: {meanings_file(split)} was written for other bytes than the split's (edited or replaced" in noted
    split.write_bytes(text)
    assert split_fingerprint(split) is not None


def test_a_csv_split_is_checked_whatever_its_suffixs_case_and_through_a_link(tmp_path, monkeypatch):
    other = _csv_split_of_another_run(tmp_path / "other", monkeypatch)
    upper = tmp_path / "copies" / "SPLIT.CSV"
    upper.parent.mkdir()
    upper.write_bytes(other.read_bytes())
    meanings_file(upper).write_bytes(meanings_file(other).read_bytes())
    linked = tmp_path / "links" / "split.csv"
    linked.parent.mkdir()
    linked.symlink_to(other)
    export_all(tmp_path / "project")
    for path in (upper, linked):
        with pytest.raises(UserError, match="was written by a preprocess run whose categories or statistics differ"):
            infer(tmp_path / "project", GENERATIVE, data_path=path, metadata_config_path=str(METADATA))


def test_a_record_beside_a_csv_split_that_is_no_regular_file_or_damaged_is_not_used(tmp_path, monkeypatch, capsys):
    split = _csv_split_of_another_run(tmp_path, monkeypatch)
    meanings_file(split).unlink()
    os.mkfifo(meanings_file(split))  # reading it would wait for a writer for ever
    assert split_fingerprint(split) is None
    meanings_file(split).unlink()
    meanings_file(split).symlink_to("/dev/zero")  # reading it would never end
    assert split_fingerprint(split) is None
    assert f"note: {meanings_file(split)} is no regular file of a record's size" in capsys.readouterr().err
    meanings_file(split).unlink()
    meanings_file(split).write_text('{"split_sha256": ')
    assert split_fingerprint(split) is None
    assert f"note: {meanings_file(split)} cannot be read (JSONDecodeError)" in capsys.readouterr().err


def test_a_csv_split_widened_since_preprocess_is_refused(tmp_path, monkeypatch):
    preprocess_reference(tmp_path, monkeypatch, write_format="csv", metadata_config_path=str(METADATA))
    split = tmp_path / "data" / "events-split2.csv"
    rows = pyarrow_csv.read_csv(split)
    widened = rows.add_column(0, "17", pa.array([0.0] * rows.num_rows))  # a value column before "16"
    pyarrow_csv.write_csv(widened, split)
    record = json.loads(meanings_file(split).read_text())
    record["split_sha256"] = hashlib.sha256(split.read_bytes()).hexdigest()  # as if the record were rewritten too
    meanings_file(split).write_text(json.dumps(record))
    export_all(tmp_path / "project")
    with pytest.raises(UserError, match="but was written with window_length 17: value columns were added or removed"):
        infer(tmp_path / "project", GENERATIVE, data_path=split)


def test_a_folder_where_a_csv_splits_meanings_go_is_refused_before_any_work(tmp_path, monkeypatch):
    (tmp_path / "data" / "events-split1.csv.meanings.json").mkdir(parents=True)
    with pytest.raises(UserError) as refused:
        preprocess_reference(tmp_path, monkeypatch, write_format="csv")
    assert refused.value.where.endswith("events-split1.csv.meanings.json")
    assert "not the meanings file of an earlier split" in refused.value.problem
    assert not (tmp_path / "data" / "events-split0.csv").exists()


def test_a_second_csv_run_replaces_the_meanings_beside_its_splits(tmp_path, monkeypatch):
    first = read_metadata(preprocess_reference(tmp_path, monkeypatch, write_format="csv"))
    second = read_metadata(
        preprocess_reference(tmp_path, monkeypatch, write_format="csv", categorical_columns=["amount"])
    )
    split = tmp_path / "data" / "events-split0.csv"
    assert meanings_fingerprint(first) != meanings_fingerprint(second) == split_fingerprint(split)
    assert split_column_kinds(split)["amount"] == "categorical"


def test_a_split_of_a_run_with_other_columns_is_refused_naming_the_columns(tmp_path, monkeypatch):
    preprocess_reference(tmp_path / "other", monkeypatch, selected_columns=["event"])
    split = tmp_path / "other" / "data" / "events-split2.parquet"
    with pytest.raises(UserError) as refused:
        check_same_meanings(split, read_metadata(METADATA), METADATA)
    assert refused.value.where == str(split)
    assert "was written by a preprocess run with other columns (event) than" in refused.value.problem


def test_a_split_whose_column_changed_kind_is_refused_naming_it(tmp_path, monkeypatch):
    preprocess_reference(tmp_path / "other", monkeypatch, categorical_columns=["amount"])
    split = tmp_path / "other" / "data" / "events-split2.parquet"
    with pytest.raises(UserError) as refused:
        check_same_meanings(split, read_metadata(METADATA), METADATA)
    assert refused.value.problem.startswith(f"holds 'amount' as a categorical column, but {METADATA} has it as a real")


@pytest.mark.parametrize("write_format", ["parquet", "pt"])
def test_a_shard_of_another_run_in_a_folder_is_refused(tmp_path, monkeypatch, write_format):
    sharded = {"merge_output": False, "write_format": write_format, "n_cores": 2}
    preprocess_reference(tmp_path / "one", monkeypatch, **sharded)
    table = pq.read_table(REFERENCE_PARQUET)
    amounts = pa.compute.multiply(table.column("amount").cast(pa.float64()), 3.0)
    changed = tmp_path / "input" / REFERENCE_PARQUET.name
    changed.parent.mkdir()
    pq.write_table(table.set_column(table.schema.get_field_index("amount"), "amount", amounts), changed)
    preprocess_reference(tmp_path / "other", monkeypatch, data_file=changed, **sharded)
    folder = tmp_path / "one" / "data" / "events-split2"
    shards = sorted(folder.glob(f"*.{write_format}"))
    assert len(shards) == 2
    assert len(load_split(folder, ["event", "amount"], {"event"})) > 0  # its own shards agree with its metadata
    shutil.copy(tmp_path / "other" / "data" / "events-split2" / shards[1].name, shards[1])
    with pytest.raises(UserError) as refused:
        load_split(folder, ["event", "amount"], {"event"})
    assert refused.value.where == str(shards[1])
    assert "another preprocess run" in refused.value.problem and "preprocess the split again" in refused.value.problem


@pytest.mark.parametrize("write_format", ["parquet", "pt"])
def test_train_refuses_shard_folders_of_another_preprocess_run_than_its_metadata(tmp_path, monkeypatch, write_format):
    """A folder carries its metadata.json, whose meanings must be the configured metadata's, as a merged split's
    record must."""
    sharded = {"merge_output": False, "write_format": write_format}
    metadata_path = _preprocessed(tmp_path / "one", monkeypatch, **sharded)
    other = _preprocessed(tmp_path / "other", monkeypatch, scale=3.0, **sharded).parent.parent.parent
    own = tmp_path / "one" / "data" / "events-split2"
    check_same_meanings(own, read_metadata(metadata_path), metadata_path)
    for split in ("events-split0", "events-split1"):
        shutil.rmtree(tmp_path / "one" / "data" / split)
        shutil.copytree(other / "data" / split, tmp_path / "one" / "data" / split)
    config = tiny_train_config()
    config["global_training"]["read_format"] = write_format
    config["dataset"]["part"]["metadata_config_path"] = str(metadata_path)
    write_yaml(tmp_path / "one" / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], tmp_path / "one")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    folder_metadata = tmp_path / "one" / "data" / "events-split0" / "metadata.json"
    assert f"error: {folder_metadata}: was written by a preprocess run whose categories or statistics differ" in (
        result.stderr
    )
    assert not (tmp_path / "one" / "models").exists()


@pytest.mark.parametrize("merge_output", [True, False])
def test_a_split_is_the_metadatas_whatever_the_spelling_of_its_types(tmp_path, monkeypatch, merge_output):
    """3.x's metadata may spell a categorical column Int32 and a real one Float16, which a reusing preprocess
    records in this project's spelling: the same maps and statistics are the same meanings."""
    metadata_path = _preprocessed(tmp_path, monkeypatch, merge_output=merge_output, write_format="parquet")
    split = tmp_path / "data" / ("events-split2.parquet" if merge_output else "events-split2")
    spelled = json.loads(metadata_path.read_text())
    spelled["column_data_types"].update(event="Int32", channel="UInt8", amount="Float16")
    other_spelling = tmp_path / "spelled-by-3x.json"
    other_spelling.write_text(json.dumps(spelled))
    check_same_meanings(split, read_metadata(other_spelling), other_spelling)
    spelled["selected_columns_statistics"]["amount"]["mean"] += 1.0
    other_statistics = tmp_path / "other-statistics.json"
    other_statistics.write_text(json.dumps(spelled))
    with pytest.raises(UserError, match="categories or statistics differ"):
        check_same_meanings(split, read_metadata(other_statistics), other_statistics)
