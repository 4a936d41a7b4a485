"""The train guide's canonical configuration runs end to end: two parts, an incremental and an interleaved phase."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.csv as pacsv
import torch
import yaml
from conftest import run_sequifier, write_yaml

GUIDE = Path(__file__).resolve().parents[1] / "fixtures" / "guide"


def prepare_parts(project: Path) -> None:
    """events-original.csv: sequences 0-79; events-increment.csv: the rest.

    Both are preprocessed, the increment with the original's meanings.
    """
    table = pacsv.read_csv(project / "data" / "events.csv")
    early = pc.less(table["sequenceId"], 80)
    pacsv.write_csv(table.filter(early), project / "data" / "events-original.csv")
    pacsv.write_csv(table.filter(pc.invert(early)), project / "data" / "events-increment.csv")
    base = yaml.safe_load((project / "configs" / "preprocess-parquet.yaml").read_text())
    base.update(read_format="csv", preprocessing_data_path="data/events-original.csv")
    write_yaml(project / "configs" / "preprocess-original.yaml", base)
    base.update(
        preprocessing_data_path="data/events-increment.csv",
        metadata_config_path="configs/metadata_configs/events-original.json",
    )
    write_yaml(project / "configs" / "preprocess-increment.yaml", base)
    for name in ("original", "increment"):
        result = run_sequifier(["preprocess", "--config-path", f"configs/preprocess-{name}.yaml"], project)
        assert result.returncode == 0, result.stderr


def test_canonical_guide_config_runs_end_to_end(reference_project: Path):
    project = reference_project
    prepare_parts(project)
    config = yaml.safe_load((GUIDE / "train-canonical.yaml").read_text())
    config["device"] = "cpu"  # the guide asks for cuda; this machine has none
    config["global_training"]["context_length"] = 16  # the fixture stores windows of 17 items
    parts = config["dataset_training"]["events"]["parts"]
    parts["original"]["metadata_config_path"] = "configs/metadata_configs/events-original.json"
    parts["increment"]["metadata_config_path"] = "configs/metadata_configs/events-increment.json"
    write_yaml(project / "configs" / "train.yaml", config)

    result = run_sequifier(["train"], project, timeout=600)
    assert result.returncode == 0, result.stderr
    models = sorted(p.name for p in (project / "models").iterdir())
    assert "event-model-last-7.onnx" in models and any(m.startswith("event-model-best-") for m in models)
    rows = list(csv.DictReader((project / "logs" / "event-model" / "training-metrics.csv").open()))
    phases = [(r["phase"], r["part"]) for r in rows if r["target"] != "aggregate"]
    assert set(phases[:1]) == {("incremental_finetuning", "increment")}
    assert {p for p in phases if p[0] == "complete_retraining"} == {
        ("complete_retraining", "original"),
        ("complete_retraining", "increment"),
    }
    epochs = {int(r["epoch"]) for r in rows}
    assert epochs == set(range(1, 8))
    learning_rates = [float(r["learning_rate"]) for r in rows if r["target"] == "aggregate"]
    assert learning_rates[0] == learning_rates[2] == 0.0001  # StepLR restarts with the new phase (reset mode)
    assert learning_rates[1] < learning_rates[0]
    validation = list(csv.DictReader((project / "logs" / "event-model" / "validation-metrics.csv").open()))
    assert {r["part"] for r in validation if r["target"] == "event"} == {"original", "increment"}
    checkpoint = torch.load(project / "checkpoints" / "event-model" / "latest.pt", weights_only=True)
    progress = checkpoint["progress"]
    assert (progress["completed_epochs"], progress["phase_index"]) == (7, 2)  # both phases done
    log = (project / "logs" / "event-model" / "event-model.log").read_text()
    assert "complete_retraining" in log
