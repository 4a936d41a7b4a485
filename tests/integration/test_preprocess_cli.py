"""`sequifier preprocess` through the CLI: --randomize, --data-path with a folder, --selected-columns, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import run_sequifier


def test_randomize_prints_and_records_the_seed(reference_project: Path):
    result = run_sequifier(
        ["preprocess", "--config-path", "configs/preprocess-parquet.yaml", "--randomize"], reference_project
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    seed = int(re.search(r"randomize: using seed (\d+)", result.stderr).group(1))
    metadata = json.loads((reference_project / "configs" / "metadata_configs" / "events.json").read_text())
    assert metadata["seed"] == seed


def test_folder_data_path_and_selected_columns(reference_project: Path):
    folder = reference_project / "data" / "events_parts"
    folder.mkdir()
    table = pq.read_table(reference_project / "data" / "events.parquet")
    pq.write_table(table.slice(0, 3000), folder / "a.parquet")
    pq.write_table(table.slice(3000), folder / "b.parquet")
    result = run_sequifier(
        [
            "preprocess",
            "--config-path",
            "configs/preprocess-pt.yaml",
            "--data-path",
            "data/events_parts",
            "--selected-columns",
            "event,amount",
        ],
        reference_project,
    )
    assert result.returncode == 0, result.stderr
    metadata = json.loads((reference_project / "configs" / "metadata_configs" / "events_parts.json").read_text())
    assert list(metadata["column_data_types"]) == ["event", "amount"]
    assert metadata["split_paths"] == [f"./data/events_parts-split{i}" for i in range(3)]
    described = json.loads((reference_project / "data" / "events_parts-split0" / "metadata.json").read_text())
    assert described["total_samples"] == 310 and len(described["batch_files"]) == 2
    assert not [p for p in (reference_project / "data").iterdir() if p.name.startswith(".")]


def test_bad_column_is_one_line_and_leaves_nothing(reference_project: Path):
    (reference_project / "data" / "events-split0.parquet").unlink()
    before = sorted(p.name for p in (reference_project / "data").iterdir())
    result = run_sequifier(
        ["preprocess", "--config-path", "configs/preprocess-parquet.yaml", "--selected-columns", "event,amout"],
        reference_project,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: amout: selected column is not in the input")
    assert sorted(p.name for p in (reference_project / "data").iterdir()) == before


@pytest.mark.parametrize("columns", ["", "event,,amount"])
def test_an_empty_selected_column_name_is_refused(reference_project: Path, columns: str):
    result = run_sequifier(
        ["preprocess", "--config-path", "configs/preprocess-parquet.yaml", "--selected-columns", columns],
        reference_project,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: --selected-columns: {columns!r} has an empty name; give comma-separated column names, "
        "e.g. --selected-columns event,amount"
    )


def test_help_explains_the_preprocess_flags(reference_project: Path):
    result = run_sequifier(["preprocess", "--help"], reference_project)
    assert result.returncode == 0
    for flag in ("--config-path", "--data-path", "--selected-columns", "--randomize"):
        assert flag in result.stdout


def test_a_yaml_list_names_columns_holding_commas(reference_project: Path):
    table = pq.read_table(reference_project / "data" / "events.parquet")
    renamed = table.rename_columns(["net, gross" if name == "amount" else name for name in table.column_names])
    pq.write_table(renamed, reference_project / "data" / "commas.parquet")
    result = run_sequifier(
        [
            "preprocess",
            "--config-path",
            "configs/preprocess-parquet.yaml",
            "--data-path",
            "data/commas.parquet",
            "--selected-columns",
            '["net, gross", event]',
        ],
        reference_project,
    )
    assert result.returncode == 0, result.stderr
    metadata = json.loads((reference_project / "configs" / "metadata_configs" / "commas.json").read_text())
    assert list(metadata["column_data_types"]) == ["net, gross", "event"]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("[event, 1]", "item 2 of '[event, 1]' is 1, not a column name; quote names YAML reads otherwise"),
        ("[]", "'[]' is not a non-empty YAML list"),
        ('["event", amount', "'[\"event\", amount' is not a YAML list ("),
    ],
)
def test_a_bad_yaml_column_list_is_one_line(reference_project: Path, columns: str, message: str):
    result = run_sequifier(
        ["preprocess", "--config-path", "configs/preprocess-parquet.yaml", "--selected-columns", columns],
        reference_project,
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"error: --selected-columns: {message}")
    assert len(result.stderr.strip().splitlines()) == 1
