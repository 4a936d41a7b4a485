"""Bad configs and bad inputs raise UserError naming the key/column/file, and leave no outputs behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq
import pytest
import yaml

import sequifier.data.preprocess.run as run_module
from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.preprocess import run_preprocess

CONFIG = "configs/preprocess.yaml"
DATA = "data/events.parquet"


def good_table() -> pa.Table:
    n_sequences, n_items = 3, 12
    return pa.table(
        {
            "sequenceId": np.repeat(np.arange(n_sequences), n_items),
            "itemPosition": np.tile(np.arange(n_items), n_sequences),
            "event": [f"e{i % 4}" for i in range(n_sequences * n_items)],
            "amount": np.linspace(0.0, 1.0, n_sequences * n_items),
        }
    )


def good_config(**changes) -> dict:
    config = {"project_root": ".", "preprocessing_data_path": DATA, "read_format": "parquet", "window_length": 5}
    config.update(changes)
    return config


def with_column(table: pa.Table, name: str, values) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, pa.array(values))


def amount_with(value) -> pa.Table:
    table = good_table()
    amounts = table.column("amount").to_pylist()
    amounts[7] = value
    return with_column(table, "amount", pa.array(amounts, pa.float64()))


def duplicate_position() -> pa.Table:
    positions = good_table().column("itemPosition").to_pylist()
    positions[3] = positions[2]
    return with_column(good_table(), "itemPosition", positions)


# id, config changes, table (None: no data file), config text (replaces the YAML), expected where, message part
CASES = [
    ("missing config", None, good_table(), "", "{root}/" + CONFIG, "not found"),
    ("yaml syntax", None, good_table(), "window_length: 5\nselected_columns: [event\nseed: 1\n", "{root}/" + CONFIG, "line 3"),
    ("unknown key", {"windw_length": 5}, good_table(), None, "windw_length", "did you mean 'window_length'"),
    ("no sequenceId", {}, good_table().drop_columns(["sequenceId"]), None, "sequenceId", "missing"),
    ("no itemPosition", {}, good_table().drop_columns(["itemPosition"]), None, "itemPosition", "missing"),
    ("unknown selected column", {"selected_columns": ["event", "amout"]}, good_table(), None, "amout", "did you mean 'amount'"),
    ("fractional itemPosition", {}, with_column(good_table(), "itemPosition", np.arange(36) + 0.5), None, "itemPosition", "integers"),
    ("string itemPosition", {}, with_column(good_table(), "itemPosition", [str(i) for i in range(36)]), None, "itemPosition", "integers"),
    ("duplicate position", {}, duplicate_position(), None, "itemPosition", "duplicate"),
    ("NaN real", {}, amount_with(float("nan")), None, "amount", "NaN"),
    ("inf real", {}, amount_with(float("inf")), None, "amount", "infinite"),
    ("missing real", {}, amount_with(None), None, "amount", "missing"),
    ("empty input", {}, good_table().slice(0, 0), None, "{root}/" + DATA, "no rows"),
    ("split ratios sum", {"split_ratios": [0.5, 0.3]}, good_table(), None, "split_ratios", "sum to 1"),
    ("window too short", {"window_length": 2, "max_target_offset": 2}, good_table(), None, "window_length", "max_target_offset"),
    ("missing data file", {}, None, None, "{root}/" + DATA, "not found"),
    ("pt output", {"write_format": "pt"}, good_table(), None, "write_format", "not supported yet"),
    ("unmerged output", {"merge_output": False}, good_table(), None, "merge_output", "not supported yet"),
    ("between_sequence", {"split_method": "between_sequence"}, good_table(), None, "split_method", "not supported yet"),
    ("folder input", {"preprocessing_data_path": "data"}, good_table(), None, "{root}/data", "not supported yet"),
    ("real and categorical", {"categorical_columns": ["amount"], "real_columns": ["amount"]}, good_table(), None, "real_columns", "also"),
    ("string as real", {"real_columns": ["event"]}, good_table(), None, "event", "not numeric"),
    ("override unselected", {"selected_columns": ["event"], "real_columns": ["amount"]}, good_table(), None, "real_columns", "not a selected column"),
    ("bad read format", {"read_format": "xlsx"}, good_table(), None, "read_format", "choose one of 'csv', 'parquet'"),
    ("pt input", {"read_format": "pt"}, good_table(), None, "read_format", "not supported yet"),
    ("unknown suffix", {"preprocessing_data_path": "data/events.txt", "read_format": None}, good_table(), None, "read_format", "cannot tell"),
    ("metadata reuse", {"metadata_config_path": "configs/old.json"}, good_table(), None, "metadata_config_path", "not supported yet"),
    ("id column selected", {"selected_columns": ["sequenceId", "event"]}, good_table(), None, "selected_columns", "sequenceId or itemPosition"),
    ("column twice", {"selected_columns": ["event", "event"]}, good_table(), None, "selected_columns", "more than once"),
    ("zero stride", {"window_stride": 0}, good_table(), None, "window_stride", "at least 1"),
    ("string window length", {"window_length": "5"}, good_table(), None, "window_length", "expected an integer"),
    ("negative split ratio", {"split_ratios": [1.2, -0.2]}, good_table(), None, "split_ratios", "positive"),
    ("alias and key", {"data_path": DATA}, good_table(), None, "data_path", "set only one"),
    ("bad interpolation", None, good_table(), "window_length: ${nope}\n", "{root}/" + CONFIG, "cannot resolve interpolation"),
]


def build_project(root: Path, changes: dict | None, table: pa.Table | None, config_text: str | None) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "configs").mkdir()
    if table is not None:
        pq.write_table(table, root / DATA)
    config_path = root / CONFIG
    if config_text is None:
        config_path.write_text(yaml.safe_dump(good_config(**(changes or {}))))
    elif config_text:
        config_path.write_text(config_text)
    return config_path


def output_files(root: Path) -> list[str]:
    inputs = {root / DATA, root / CONFIG}
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p not in inputs)


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_bad_input_raises_user_error(case, tmp_path, monkeypatch):
    _, changes, table, config_text, where, message = case
    config_path = build_project(tmp_path, changes, table, config_text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config_path))
    assert error.value.where == where.format(root=tmp_path)
    assert message in error.value.problem
    assert output_files(tmp_path) == []


def test_bad_csv_input(tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {"preprocessing_data_path": "data/events.csv", "read_format": "csv"}, None, None)
    pv.write_csv(duplicate_position(), tmp_path / "data" / "events.csv")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config_path))
    assert error.value.where == "itemPosition"
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["events.csv"]


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {}, good_table(), None)
    monkeypatch.chdir(tmp_path)

    def broken_write(path, metadata):
        raise OSError("disk full")

    monkeypatch.setattr(run_module, "write_metadata", broken_write)
    with pytest.raises(OSError):
        run_preprocess(load_preprocess_config(config_path))
    assert output_files(tmp_path) == []


def test_failed_rename_removes_all_outputs(tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {}, good_table(), None)
    monkeypatch.chdir(tmp_path)
    run_preprocess(load_preprocess_config(config_path))
    real_replace = run_module.os.replace

    def replace_then_fail(source, target):
        if str(target).endswith(".json"):
            raise OSError("rename failed")
        real_replace(source, target)

    monkeypatch.setattr(run_module.os, "replace", replace_then_fail)
    with pytest.raises(OSError):
        run_preprocess(load_preprocess_config(config_path))
    assert output_files(tmp_path) == []
