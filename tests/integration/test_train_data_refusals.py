"""`sequifier train` refuses stored windows it cannot train on, naming the file, before the first step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import tiny_train_config
from run_helpers import project_with

from sequifier import cli


def _empty(project: Path, split: int) -> None:
    path = project / "data" / f"events-split{split}.parquet"
    pq.write_table(pq.read_table(path).slice(0, 0), path)


def _event_id(project: Path, value: int) -> None:
    path = project / "data" / "events-split0.parquet"
    table = pq.read_table(path)
    row = int(np.flatnonzero(np.asarray(table.column("inputCol").to_pylist()) == "event")[0])
    values = table.column("16").to_numpy().copy()
    values[row] = value
    pq.write_table(table.set_column(table.schema.get_field_index("16"), "16", pa.array(values)), path)


def _validation_events_missing(project: Path) -> None:
    """Every event of the validation split [unknown] (id 0), as a column missing there would preprocess."""
    path = project / "data" / "events-split1.parquet"
    table = pq.read_table(path)
    events = pa.array(np.asarray(table.column("inputCol").to_pylist()) == "event")
    for name in [n for n in table.schema.names if n.isdigit()]:
        values = table.column(name).to_numpy()
        column = pa.array(np.where(events.to_numpy(zero_copy_only=False), 0.0, values))
        table = table.set_column(table.schema.get_field_index(name), name, column)
    pq.write_table(table, path)


def _wider_metadata(project: Path) -> None:
    path = project / "configs" / "metadata_configs" / "events.json"
    metadata = json.loads(path.read_text())
    metadata.update(window_length=40, window_lengths=[40, 40, 40])
    path.write_text(json.dumps(metadata))


CASES = [
    ("empty-training-split", lambda p: _empty(p, 0), [], "events-split0.parquet: holds no views"),
    ("empty-validation-split", lambda p: _empty(p, 1), [], "events-split1.parquet: holds no views"),
    ("id-beyond-the-classes", lambda p: _event_id(p, 99), [], "holds the id 99, outside the 15 classes"),
    (
        "no-validation-value-of-a-target",
        _validation_events_missing,
        [],
        "evaluation.sources: the validation split of default holds no value of the target 'event' to score",
    ),
    (
        "windows-narrower-than-the-metadata-says",
        _wider_metadata,
        [],
        "events.json describes windows of 40 (window_length): the split and the metadata come from different",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_unusable_windows_are_refused_before_training(case, tmp_path, monkeypatch, capsys):
    _, damage, overrides, message = case
    project = project_with(tmp_path, "project", tiny_train_config())
    damage(project)
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) as stop:
        cli.main(["train", *overrides])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and message in error and "\n" not in error, error
    assert not (project / "models").exists() or not any((project / "models").iterdir())
