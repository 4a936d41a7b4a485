"""A training run writes every artifact it is asked for, best and last, and each one infers."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import run_sequifier, tiny_train_config, write_yaml


def test_training_exports_onnx_embedding_dropout_and_pt_artifacts(reference_project: Path):
    config = tiny_train_config(
        export_embedding_model=True, export_pt=True, export_with_dropout=True, training_plan={"epochs": 2}
    )
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train", "--config-path", "configs/train.yaml"], reference_project)
    assert result.returncode == 0, result.stderr
    models = sorted(p.name for p in (reference_project / "models").iterdir())
    best = (
        next(name for name in models if name.startswith("tiny-best-") and name.endswith(".pt"))
        .removesuffix(".pt")
        .split("-")[-1]
    )
    assert models == sorted(
        f"{stem}.{suffix}"
        for kind, epoch in (("best", best), ("last", "2"))
        for stem, suffix in (
            (f"tiny-{kind}-{epoch}", "onnx"),
            (f"tiny-embedding-{kind}-{epoch}", "onnx"),
            (f"tiny-{kind}-{epoch}", "pt"),
        )
    )
    bundle = torch.load(reference_project / "models" / "tiny-last-2.pt", weights_only=True)
    assert bundle["export_metadata"]["provenance"]["epoch"] == 2

    runs = {
        "dropout.yaml": {"model_path": "models/tiny-last-*.onnx", "infer_with_dropout": True},
        "embedding.yaml": {
            "model_path": "models/tiny-embedding-last-*.onnx",
            "model_type": "embedding",
            "infer_with_dropout": True,
        },
        "pt.yaml": {"model_path": "models/tiny-best-*.pt", "output_probabilities": True},
    }
    for name, fields in runs.items():
        write_yaml(
            reference_project / "configs" / name,
            {"metadata_config_path": "configs/metadata_configs/events.json", **fields},
        )
        result = run_sequifier(["infer", "--config-path", f"configs/{name}"], reference_project)
        assert result.returncode == 0, (name, result.stderr)
    outputs = reference_project / "outputs"
    assert (outputs / "predictions" / "tiny-last-2" / "part-000.csv").is_file()
    assert (outputs / "embeddings" / "tiny-embedding-last-2" / "part-000.csv").is_file()
    assert (outputs / "probabilities" / f"tiny-best-{best}" / "event" / "part-000.csv").is_file()
