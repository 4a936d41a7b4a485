"""preprocess -> train -> ONNX -> infer through the CLI on the reference-v3 data."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from conftest import run_sequifier, tiny_train_config, write_yaml


def read_csv(path: Path) -> list[dict]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_trains_on_reference_splits_unchanged(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(training_plan={"epochs": 2}))
    result = run_sequifier(["train", "--config-path", "configs/train.yaml"], reference_project)
    assert result.returncode == 0, result.stderr
    models = sorted(p.name for p in (reference_project / "models").iterdir())
    assert "tiny-last-2.onnx" in models
    assert any(name.startswith("tiny-best-") for name in models)
    log = (reference_project / "logs" / "tiny" / "tiny.log").read_text()
    assert "validation loss" in log and "persistence baseline" in log
    rows = read_csv(reference_project / "logs" / "tiny" / "validation-metrics.csv")
    seen = {(r["epoch"], r["target"], r["metric"]) for r in rows}
    for epoch in ("1", "2"):
        for target in ("event", "amount", "aggregate"):
            for metric in ("loss", "baseline_loss"):
                assert (epoch, target, metric) in seen
    assert all(math.isfinite(float(r["value"])) for r in rows)


def test_preprocess_train_with_override_and_infer(reference_project: Path):
    project = reference_project
    for split in (project / "data").glob("events-split*.parquet"):
        split.unlink()
    result = run_sequifier(["preprocess", "--config-path", "configs/preprocess-parquet.yaml"], project)
    assert result.returncode == 0, result.stderr
    config = tiny_train_config()
    config["global_training"]["context_length"] = 16  # one view per stored window of 17
    write_yaml(project / "configs" / "train.yaml", config)
    result = run_sequifier(["train", "--config-path", "configs/train.yaml", "global_training.batch_size=8"], project)
    assert result.returncode == 0, result.stderr

    training_rows = read_csv(project / "logs" / "tiny" / "training-metrics.csv")
    train_windows = pq.read_metadata(project / "data" / "events-split0.parquet").num_rows // 4
    assert int(training_rows[-1]["global_step"]) == math.ceil(train_windows / 8)
    recorded = yaml.safe_load(next(project.glob("outputs/*/*/.hydra/config.yaml")).read_text())
    assert recorded["global_training"]["batch_size"] == 8

    write_yaml(
        project / "configs" / "infer.yaml",
        {
            "model_path": "models/tiny-last-*.onnx",
            "metadata_config_path": "configs/metadata_configs/events.json",
        },
    )
    result = run_sequifier(["infer", "--config-path", "configs/infer.yaml"], project)
    assert result.returncode == 0, result.stderr
    predictions = read_csv(project / "outputs" / "predictions" / "tiny-last-1" / "part-000.csv")
    split = pq.read_table(project / "data" / "events-split2.parquet").to_pylist()
    windows = [row for row in split if row["inputCol"] == "event"]
    assert len(predictions) == len(windows)
    assert list(predictions[0]) == [
        "sequenceId",
        "subsequenceId",
        "windowStartOffset",
        "itemPosition",
        "event",
        "amount",
    ]
    id_map = json.loads((project / "configs" / "metadata_configs" / "events.json").read_text())["id_maps"]["event"]
    data_values = {value for value in id_map if not value.startswith("[")}
    raw_amounts = [float(r["amount"]) for r in csv.DictReader((project / "data" / "events.csv").open())]
    for prediction, window in zip(predictions, windows):
        assert int(prediction["sequenceId"]) == window["sequenceId"]
        assert int(prediction["itemPosition"]) == window["startItemPosition"] + 16  # the window's last item
        assert prediction["event"] in data_values
        assert min(raw_amounts) - 50 < float(prediction["amount"]) < max(raw_amounts) + 50


def test_trains_on_reference_pt_shards(reference_project: Path):
    config = tiny_train_config(training_plan={"epochs": 1})
    config["global_training"]["read_format"] = "pt"
    config["dataset"]["part"]["metadata_config_path"] = "configs/metadata_configs/events_pt.json"
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 0, result.stderr
    assert (reference_project / "models" / "tiny-last-1.onnx").is_file()
    rows = read_csv(reference_project / "logs" / "tiny" / "validation-metrics.csv")
    assert any(r["target"] == "event" and r["metric"] == "loss" for r in rows)
