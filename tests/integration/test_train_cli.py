"""Flags and override forms of `sequifier train`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from conftest import run_sequifier, tiny_train_config, write_yaml
from run_helpers import project_with

from sequifier.machine_memory import GIB, physical_memory


def printed_config(project: Path, *args: str) -> dict:
    result = run_sequifier(["train", "--cfg", "job", *args], project)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_flags_and_plus_tilde_overrides_reach_the_config(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    config = printed_config(
        reference_project,
        "--model-name",
        "renamed",
        "--seed",
        "5",
        "~evaluation",
        "+global_training.optimizer={name:Adam,betas:[0.8,0.9]}",
        "model.interface.decoder.prediction_length=2",
    )
    assert config["model_name"] == "renamed"
    assert config["seed"] == 5
    assert config["evaluation"] is None
    assert config["global_training"]["optimizer"]["betas"] == [0.8, 0.9]
    assert config["model"]["interfaces"]["default"]["decoder"]["prediction_length"] == 2


def test_canonical_spelling_overrides_work_on_a_canonical_file(reference_project: Path):
    config = tiny_train_config()
    config["model"]["interfaces"] = {"main": config["model"].pop("interface")}
    write_yaml(reference_project / "configs" / "train.yaml", config)
    printed = printed_config(reference_project, "model.interfaces.main.decoder.prediction_length=3")
    assert printed["model"]["interfaces"]["main"]["decoder"]["prediction_length"] == 3
    assert printed["dataset_training"]["default"]["model_interface"] == "main"


def test_skip_metadata_defers_metadata_checks_to_the_job(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    (reference_project / "configs" / "metadata_configs" / "events.json").unlink()
    checked = run_sequifier(["train"], reference_project)
    assert checked.returncode == 2 and "metadata_config_path" in checked.stderr
    assert not (reference_project / "outputs").exists()
    deferred = run_sequifier(["train", "--skip-metadata", "hydra.run.dir=record"], reference_project)
    assert deferred.returncode == 2 and "metadata_config_path" in deferred.stderr
    assert "Traceback" not in deferred.stderr
    assert (reference_project / "record" / ".hydra").is_dir()  # the job ran (a folder chosen by hand stays)
    assert not (reference_project / "outputs").exists()
    assert run_sequifier(["train", "--skip-metadata"], reference_project).returncode == 2
    assert not (reference_project / "outputs").exists()  # the folder made for the refused job is removed


def test_an_invalid_choice_is_refused_before_training(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    result = run_sequifier(
        ["train", "global_training.num_workers=2", "model.backbone.architecture.shared_layer_groups=[[0,0]]"],
        reference_project,
    )
    assert result.returncode == 2
    assert "shared_layer_groups[0]" in result.stderr
    assert not (reference_project / "models").exists()


def test_a_project_whose_path_reads_as_override_syntax_trains_and_sweeps(tmp_path: Path):
    """Letters beyond ASCII, spaces and `( ) = , '` in the project's path reach Hydra as one quoted value."""
    project = project_with(tmp_path, "prøjekt (1)=a,b'c", tiny_train_config())
    single = run_sequifier(["train", "training_plan.epochs=1"], project)
    assert single.returncode == 0, single.stderr[-2000:]
    swept = run_sequifier(["train", "-m", "training_plan.epochs=1", "seed=3"], project)
    assert swept.returncode == 0, swept.stderr[-2000:]
    assert len(list((project / "multirun").glob("*/*/0/result.json"))) == 1


@pytest.mark.skipif((physical_memory() or 0) > 200 * GIB, reason="the pass's logits below fit a machine of this memory")
def test_passes_whose_logits_exceed_the_memory_are_refused_before_training(reference_project: Path):
    config = tiny_train_config()
    config["global_training"].update(batch_size=10**9, max_tokens_per_pass=10**9)  # one pass of 10**9 tokens
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "column 'event'" in result.stderr and "a training pass of 1,000,000,000 tokens" in result.stderr
    assert "fit: set global_training.max_tokens_per_pass to at most" in result.stderr
    assert not (reference_project / "checkpoints").exists()


def test_a_feed_forward_without_its_width_trains_at_four_times_the_model_width(reference_project: Path):
    """3.x requires feed_forward.dim; left out (or removed with ~) it is 4 x dim_model."""
    config = tiny_train_config()
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train", "~model.backbone.architecture.feed_forward.dim"], reference_project)
    assert result.returncode == 0, result.stderr[-2000:]
    checkpoint = torch.load(next((reference_project / "checkpoints").rglob("latest.pt")), weights_only=True)
    up = next(v for k, v in checkpoint["model_state_dict"].items() if k.endswith("feed_forward.up.weight"))
    width = config["model"]["backbone"]["architecture"]["dim_model"]
    assert up.shape == (2 * 4 * width, width)  # a gated activation's gate and value, 4 x dim_model each
