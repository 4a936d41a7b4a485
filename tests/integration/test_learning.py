"""Training learns real structure: on Markov-chain data the model beats persistence and approaches the floor."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from conftest import run_sequifier, tiny_train_config, write_yaml

from sequifier.project.demo_data import write_demo_data


def _train_on_events(project: Path, data: str, epochs: int, **training) -> None:
    """Preprocess the project's config, then train the tiny model on the event column of `data` alone."""
    assert run_sequifier(["preprocess"], project).returncode == 0
    config = tiny_train_config(training_plan={"epochs": epochs})
    config["global_training"].update(training)
    config["model"]["interface"].update(
        input_columns=["event"], target_columns=["event"], ingestion={"type": "embedding", "output_dim": 16}
    )
    config["dataset"] = {
        "part": {"metadata_config_path": f"configs/metadata_configs/{data}.json"},
        "criterion": {"event": "CrossEntropyLoss"},
    }
    write_yaml(project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], project)
    assert result.returncode == 0, result.stderr


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
    _train_on_events(tmp_path, "chain", epochs=3, batch_size=64, learning_rate=0.01)
    rows = [
        r
        for r in csv.DictReader((tmp_path / "logs" / "tiny" / "validation-metrics.csv").open())
        if r["target"] == "event" and r["epoch"] == "3"
    ]
    values = {r["metric"]: float(r["value"]) for r in rows}
    uniform = math.log(24)
    assert values["loss"] < values["baseline_loss"]
    assert values["loss"] < chain.entropy_rate + 0.5 * (uniform - chain.entropy_rate)


def test_the_persistence_baseline_gives_every_class_alike_where_no_value_comes_before(tmp_path: Path):
    """Sequences that never change: persistence is right wherever a value comes before the target, and knows
    nothing after a window's padding, where it spreads itself over every class (K = the values and [other])."""
    values = "abcde"
    rows = [(s, t, values[s % len(values)]) for s in range(20) for t in range(30)]
    data = tmp_path / "data" / "constant.parquet"
    data.parent.mkdir()
    pq.write_table(pa.table(dict(zip(("sequenceId", "itemPosition", "event"), zip(*rows)))), data)
    write_yaml(
        tmp_path / "configs" / "preprocess.yaml",
        {
            "preprocessing_data_path": "data/constant.parquet",
            "selected_columns": ["event"],
            "split_ratios": [0.6, 0.2, 0.2],
            "window_length": 9,
            "window_stride": 4,
        },
    )
    _train_on_events(tmp_path, "constant", epochs=1)
    pads = pq.read_table(tmp_path / "data" / "constant-split1.parquet").column("leftPadLength").to_pylist()
    targets = sum(9 - max(pad, 1) for pad in pads)  # a window's items after its first, or after its padding
    after_padding = sum(1 for pad in pads if pad > 0)
    assert after_padding > 0
    logged = [
        float(r["value"])
        for r in csv.DictReader((tmp_path / "logs" / "tiny" / "validation-metrics.csv").open())
        if r["target"] == "event" and r["metric"] == "baseline_loss"
    ]
    assert logged and math.isclose(logged[-1], after_padding * math.log(len(values) + 1) / targets, rel_tol=1e-4)
