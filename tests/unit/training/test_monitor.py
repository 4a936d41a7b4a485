"""The monitored metric picks the best epoch and stops training early."""

from __future__ import annotations

from pathlib import Path

from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.config.validate_training import config_warnings
from sequifier.training.engine import Trainer
from sequifier.training.evaluation import Evaluation
from sequifier.training.monitor import Monitor


def test_training_stops_after_patience_epochs_without_improvement(reference_project: Path, tmp_path: Path):
    config = tiny_train_config(training_plan={"epochs": 6})
    # SGD steps of 1e-12 leave float32 weights unchanged, so the validation loss never improves after epoch 1
    config["global_training"].update(learning_rate=1e-12, optimizer={"name": "SGD"}, early_stopping_patience=2)
    config["model"]["backbone"]["architecture"]["dropout"] = 0.0
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    result = Trainer(spec).run()
    models = sorted(p.name for p in (reference_project / "models").iterdir())
    last = [m for m in models if "-last-" in m]
    assert result.best_epoch == 1
    assert last == ["tiny-last-3.onnx"]
    assert "early stopping" in (reference_project / "logs" / "tiny" / "tiny.log").read_text()


def test_mode_max_on_the_loss_keeps_the_highest_and_says_that_it_is_the_worst():
    config = tiny_train_config()
    config["evaluation"] = {"sources": [{"source": "default"}], "monitor": {"source": "default", "mode": "max"}}
    canonical = canonical_config(config)
    assert any("the epoch of the highest validation loss, the worst one" in w for w in config_warnings(canonical))
    monitor = Monitor(canonical)
    losses = {1: 2.0, 2: 3.0, 3: 1.0}
    for epoch, loss in losses.items():
        monitor.update(epoch, {"default": Evaluation(losses={}, baseline={}, loss=loss, baseline_loss=0.0)}, 0.0)
    assert monitor.best_epoch == 2
