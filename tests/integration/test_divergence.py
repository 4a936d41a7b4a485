"""A diverging run stops at once in one line; no model or checkpoint is written from non-finite weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from conftest import run_sequifier, tiny_train_config, write_yaml


def test_a_huge_learning_rate_stops_the_run_without_exporting(reference_project: Path):
    config = tiny_train_config(training_plan={"epochs": 3})
    config["global_training"].update(learning_rate=1e6, optimizer={"name": "SGD"}, save_interval_batches=2)
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    assert "became" in errors[0] and "last finite loss" in errors[0] and "learning_rate 1e+06" in errors[0]
    assert not (reference_project / "models").exists() or not list((reference_project / "models").iterdir())

    for checkpoint in (reference_project / "checkpoints" / "tiny").glob("*.pt"):
        weights = torch.load(checkpoint, weights_only=True)["model_state_dict"]
        assert all(bool(torch.isfinite(w).all()) for w in weights.values() if w.is_floating_point()), checkpoint


def test_a_non_finite_value_in_the_data_is_refused_before_training_naming_column_and_file(reference_project: Path):
    split = reference_project / "data" / "events-split0.parquet"
    table = pq.read_table(split)
    column = table.column("5").to_numpy().copy()
    column[np.flatnonzero(np.array(table.column("inputCol").to_pylist()) == "amount")[0]] = np.nan
    pq.write_table(table.set_column(table.schema.get_field_index("5"), "5", pa.array(column)), split)
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(training_plan={"epochs": 1}))
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: amount: "), result.stderr
    assert "events-split0.parquet holds NaN or infinite values" in errors[0]
    assert not list((reference_project / "checkpoints").glob("*/*.pt"))
