"""Training learns real structure: on Markov-chain data the model beats persistence and approaches the floor."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from conftest import run_sequifier, tiny_train_config, write_yaml

from sequifier.project.demo_data import write_demo_data


def test_model_learns_a_markov_chain(tmp_path: Path):
    chain = write_demo_data(tmp_path / "data" / "chain.parquet", n_sequences=400, min_length=60, max_length=100, seed=3)
    write_yaml(
        tmp_path / "configs" / "preprocess.yaml",
        {
            "preprocessing_data_path": "data/chain.parquet",
            "selected_columns": ["event", "amount"],
            "split_ratios": [0.8, 0.2],
            "window_length": 24,
            "window_stride": 16,
        },
    )
    assert run_sequifier(["preprocess"], tmp_path).returncode == 0
    config = tiny_train_config(training_plan={"epochs": 3})
    config["global_training"].update(batch_size=64, learning_rate=0.01)
    config["model"]["interface"].update(
        input_columns=["event"], target_columns=["event"], ingestion={"type": "embedding", "output_dim": 16}
    )
    config["dataset"] = {
        "part": {"metadata_config_path": "configs/metadata_configs/chain.json"},
        "criterion": {"event": "CrossEntropyLoss"},
    }
    write_yaml(tmp_path / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [
        r
        for r in csv.DictReader((tmp_path / "logs" / "tiny" / "validation-metrics.csv").open())
        if r["target"] == "event" and r["epoch"] == "3"
    ]
    values = {r["metric"]: float(r["value"]) for r in rows}
    uniform = math.log(24)
    assert values["loss"] < values["baseline_loss"]
    assert values["loss"] < chain.entropy_rate + 0.5 * (uniform - chain.entropy_rate)
