"""A config cannot make Hydra run code: a `hydra: {callbacks: ...}` block that would empty a file is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_sequifier, tiny_train_config, write_yaml


def callbacks(victim: Path) -> dict:
    """What emptied a file through Hydra before: a callback whose _target_ is builtins.open in write mode."""
    return {"callbacks": {"empty_it": {"_target_": "builtins.open", "file": str(victim), "mode": "w"}}}


@pytest.mark.parametrize("where", ["train-file", "fragment"])
def test_a_hydra_callbacks_block_cannot_empty_a_file(where, reference_project: Path):
    victim = reference_project / "precious.txt"
    victim.write_text("keep me\n")
    config = tiny_train_config()
    if where == "fragment":
        write_yaml(reference_project / "configs" / "launch.yaml", {"hydra": callbacks(victim)})
        config["additional_config_paths"] = ["configs/launch.yaml"]
    else:
        config["hydra"] = callbacks(victim)
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], reference_project)
    assert victim.read_text() == "keep me\n"
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'hydra' is not accepted" in lines[0] and "Traceback" not in result.stderr
    assert ("launch.yaml" if where == "fragment" else "train.yaml") in lines[0]
    assert not (reference_project / "models").exists()


@pytest.mark.parametrize("command", ["preprocess", "infer"])
def test_the_other_commands_refuse_hydra_keys_too(command, reference_project: Path):
    victim = reference_project / "precious.txt"
    victim.write_text("keep me\n")
    write_yaml(reference_project / "configs" / f"{command}.yaml", {"project_root": ".", "hydra": callbacks(victim)})
    result = run_sequifier([command], reference_project)
    assert result.returncode == 2 and "'hydra' is not accepted" in result.stderr
    assert victim.read_text() == "keep me\n"


def test_files_beside_the_config_do_not_replace_the_shipped_presets(reference_project: Path):
    """Presets come from the package only: a file of the user's folder at a preset's path changes neither the
    checks nor the jobs (a job Hydra composes in another process never saw such files)."""
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    write_yaml(reference_project / "configs" / "global_training" / "optimizer" / "adamw.yaml", {"name": "SGD"})
    write_yaml(reference_project / "configs" / "mygroup" / "fast.yaml", {"seed": 4})
    result = run_sequifier(["train", "--cfg", "job", "global_training/optimizer=adamw"], reference_project)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "name: AdamW" in result.stdout and "SGD" not in result.stdout
    result = run_sequifier(["train", "--cfg", "job", "+mygroup=fast"], reference_project)
    assert result.returncode == 2 and "mygroup" in result.stderr and "Traceback" not in result.stderr
