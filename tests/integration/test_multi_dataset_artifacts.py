"""A run of two datasets on two interfaces: ONNX, logs and metrics per `<model>-<dataset>`, one run-wide PT bundle
that serves either interface at inference."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pyarrow.csv as pacsv
from conftest import REFERENCE_DIR, run_sequifier, tiny_train_config, write_yaml


def two_interface_config() -> dict:
    config = tiny_train_config(model_name="multi", export_pt=True)
    interface = config["model"].pop("interface")
    narrow = copy.deepcopy(interface)
    narrow["input_columns"], narrow["target_columns"] = ["event", "amount"], ["event"]
    narrow["ingestion"]["feature_embedding_dims"] = {"event": 12, "amount": 4}
    config["model"]["interfaces"] = {"wide": interface, "narrow": narrow}
    dataset = config.pop("dataset")
    config["dataset_training"] = {
        "sess": {"model_interface": "wide", "parts": {"p": dataset["part"]}, "criterion": dataset["criterion"]},
        "clicks": {
            "model_interface": "narrow",
            "parts": {"p": dataset["part"]},
            "criterion": {"event": "CrossEntropyLoss"},
        },
    }
    config["training_plan"] = {
        "phases": [{"name": "train", "epochs": 1, "sources": [{"source": "sess"}, {"source": "clicks"}]}]
    }
    config["evaluation"] = {
        "sources": [{"source": "sess"}, {"source": "clicks"}],
        "monitor": {"source": "sess", "metric": "loss", "mode": "min"},
    }
    return config


def test_each_dataset_has_its_onnx_and_logs_and_one_bundle_serves_both_interfaces(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", two_interface_config())
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 0, result.stderr
    models = sorted(p.name for p in (reference_project / "models").iterdir())
    assert models == sorted(
        [f"multi-{d}-{kind}-1.onnx" for d in ("sess", "clicks") for kind in ("best", "last")]
        + ["multi-best-1.pt", "multi-last-1.pt"]
    )
    for dataset in ("sess", "clicks"):
        assert (reference_project / "logs" / f"multi-{dataset}" / "validation-metrics.csv").is_file()
    assert not (reference_project / "checkpoints" / "multi-sess").exists()
    assert (reference_project / "checkpoints" / "multi" / "latest.pt").is_file()

    shutil.copy(REFERENCE_DIR / "data" / "events-split2.parquet", reference_project / "windows.parquet")
    base = {"model_path": "models/multi-last-1.pt", "data_path": "windows.parquet", "model_type": "generative"}
    write_yaml(reference_project / "unnamed.yaml", base)
    refused = run_sequifier(["infer", "--config-path", "unnamed.yaml"], reference_project)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "model_interface" in refused.stderr and "narrow" in refused.stderr and "wide" in refused.stderr

    widths = {}
    for interface in ("wide", "narrow"):
        write_yaml(reference_project / f"{interface}.yaml", base | {"model_interface": interface})
        result = run_sequifier(["infer", "--config-path", f"{interface}.yaml"], reference_project)
        assert result.returncode == 0, result.stderr
        table = pacsv.read_csv(reference_project / "outputs" / "predictions" / "multi-last-1" / "part-000.csv")
        widths[interface] = table.column_names[4:]
    assert widths == {"wide": ["event", "amount"], "narrow": ["event"]}

    routed = base | {"training_config_path": "configs/train.yaml", "dataset": "clicks"}
    write_yaml(reference_project / "routed.yaml", routed)
    result = run_sequifier(["infer", "--config-path", "routed.yaml"], reference_project)
    assert result.returncode == 0, result.stderr
    table = pacsv.read_csv(reference_project / "outputs" / "predictions" / "multi-last-1" / "part-000.csv")
    assert table.column_names[4:] == ["event"]

    onnx = reference_project / "models" / "multi-sess-last-1.onnx"
    before = onnx.read_bytes()
    write_yaml(reference_project / "configs" / "single.yaml", tiny_train_config(model_name="multi-sess"))
    refused = run_sequifier(["train", "--config-path", "configs/single.yaml"], reference_project)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "holds the logs and names the models of the run of model 'multi'" in refused.stderr
    assert onnx.read_bytes() == before


def test_a_dataset_neither_trained_nor_evaluated_is_warned_about_and_the_run_succeeds(reference_project: Path):
    config = two_interface_config()
    config["training_plan"]["phases"][0]["sources"] = [{"source": "sess"}]
    config["evaluation"] = {"sources": [{"source": "sess"}]}
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning: dataset_training.clicks: no phase trains it and no evaluation reads it" in result.stderr
    summary = result.stdout[result.stdout.index("run summary") :]
    assert "sess" in summary and "clicks  " not in summary and "multi-clicks-last-1.onnx" in summary
    assert "could not draw" not in result.stderr
