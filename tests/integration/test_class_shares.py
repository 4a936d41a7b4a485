"""`class_share_log_columns`: at every validation, the share of each class among the model's predictions at the
counted target positions of each evaluation source, in `validation-class-shares.csv` beside the dataset's metrics."""

from __future__ import annotations

import csv
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config
from run_helpers import project_with, train_here

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.data.stored import load_split
from sequifier.data.views import ViewShape, gather_batch, to_tensors, training_views
from sequifier.model.network import build_network

HELPER = Path(__file__).with_name("interrupted_train.py")
FILE = "validation-class-shares.csv"


def two_dataset_config() -> dict:
    config = tiny_train_config()
    config["model"]["interface"]["target_columns"] = ["event", "channel", "amount"]
    config["model"]["interfaces"] = {"default": config["model"].pop("interface")}
    criterion = {"event": "CrossEntropyLoss", "channel": "CrossEntropyLoss", "amount": "MSELoss"}
    part = {"metadata_config_path": "configs/metadata_configs/events.json"}
    config.pop("dataset")
    config["dataset_training"] = {
        "a": {
            "model_interface": "default",
            "parts": {"p1": part, "p2": part},
            "criterion": criterion,
            "class_share_log_columns": ["channel", "event"],
        },
        "b": {"model_interface": "default", "parts": {"only": part}, "criterion": criterion},
    }
    config["training_plan"] = {"phases": [{"name": "both", "epochs": 2, "sources": [{"source": "a"}, {"source": "b"}]}]}
    config["evaluation"] = {
        "sources": [{"source": "a"}, {"source": "a.p2"}, {"source": "b"}],
        "monitor": {"source": "a", "metric": "loss", "mode": "min"},
    }
    return config


def predicted_counts(project: Path, tmp_path: Path, epoch: int, column: str) -> dict[int, int]:
    """Argmax predictions per class id of the epoch's model at the counted positions of one validation split."""
    config = two_dataset_config()
    spec = resolve(canonical_config(config), run_dir=tmp_path / "spec", cwd=project)
    network = build_network(spec.network)
    state = torch.load(project / "checkpoints" / "tiny" / f"epoch-{epoch}.pt", weights_only=True)
    network.load_state_dict(state["model_state_dict"])
    network.eval()
    inputs = ("event", "channel", "amount")
    categorical = {"event", "channel"}
    windows = to_tensors(load_split(project / "data" / "events-split1.parquet", inputs, categorical), categorical)
    shape = ViewShape(config["global_training"]["context_length"], 1)
    window_index, end_slot = training_views(windows, shape)
    batch = gather_batch(windows, window_index, end_slot, shape, inputs, (column,))
    with torch.no_grad():
        outputs = network("default", batch.inputs, batch.left_pad_lengths)[column]
    classes = network.interfaces["default"].decoder.class_ids(column)[outputs.argmax(-1)]
    ids, counts = classes[batch.target_valid].unique(return_counts=True)
    return dict(zip(ids.tolist(), counts.tolist()))


def test_class_shares_are_the_models_predictions_per_source_and_validation(tmp_path: Path, monkeypatch):
    project = project_with(tmp_path, "run", two_dataset_config())
    train_here(project, monkeypatch)
    files = list((project / "logs").rglob(FILE))
    assert len(files) == 1, "only dataset a logs class shares"
    assert (files[0].parent / "validation-metrics.csv").is_file()
    rows = list(csv.DictReader(files[0].open()))
    assert {row["dataset"] for row in rows} == {"a"}
    assert {(row["epoch"], row["part"], row["target"]) for row in rows} == {
        (epoch, part, target) for epoch in ("1", "2") for part in ("", "p2") for target in ("channel", "event")
    }
    groups = defaultdict(list)
    for row in rows:
        groups[(row["epoch"], row["part"], row["target"])].append(row)
    labels = {"channel": {"3": "app", "4": "store", "5": "web"}}
    for (epoch, part, target), group in groups.items():
        assert sum(float(row["share"]) for row in group) == pytest.approx(1.0)
        assert all(int(row["count"]) > 0 for row in group)
        assert [int(row["class_id"]) for row in group] == sorted(int(row["class_id"]) for row in group)
        counts = {int(row["class_id"]): int(row["count"]) for row in group}
        expected = predicted_counts(project, tmp_path, int(epoch), target)
        # the source `a` reads the same validation split through both of its parts
        assert counts == {k: v * (2 if part == "" else 1) for k, v in expected.items()}
        assert {int(row["total_count"]) for row in group} == {sum(counts.values())}
        for row in group:
            assert row["class_label"] == labels.get(target, {}).get(row["class_id"], row["class_label"])
            assert row["class_label"]


@pytest.mark.slow
def test_class_share_rows_after_the_resumed_checkpoint_are_cut_and_rewritten(tmp_path: Path, monkeypatch):
    config = two_dataset_config()
    config["global_training"].update(batch_size=32, save_interval_batches=4)
    uninterrupted = project_with(tmp_path, "uninterrupted", config)
    train_here(uninterrupted, monkeypatch)
    killed = project_with(tmp_path, "killed", config)
    result = subprocess.run(
        [sys.executable, str(HELPER), "kill-in-checkpoint", "2"],
        cwd=killed,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == -9, result.stderr[-2000:]
    written = next((killed / "logs").rglob(FILE))
    recorded = torch.load(killed / "checkpoints" / "tiny" / "latest.pt", weights_only=True)["metric_bytes"]
    assert written.stat().st_size > recorded[str(written.relative_to(killed))]
    train_here(killed, monkeypatch, "global_training.resume.policy=if_exists")
    for path in (uninterrupted / "logs").rglob("*.csv"):
        expected = [row[1:] for row in csv.reader(path.open())]
        assert [row[1:] for row in csv.reader((killed / path.relative_to(uninterrupted)).open())] == expected
