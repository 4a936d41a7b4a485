"""Config files cannot make Hydra run code or read other files: `hydra`, `defaults`, instantiate keys are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tiny_train_config, write_yaml

from sequifier.config.errors import UserError
from sequifier.config.fragments import compose_file


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def opener(victim: Path) -> dict:
    return {"_target_": "builtins.open", "file": str(victim), "mode": "w"}


def with_nested(key: str, value) -> dict:
    config = tiny_train_config()
    config["training_plan"]["phases"] = [{"name": "one", "settings": {key: value}}]
    return config


REFUSED = [
    ("hydra-callbacks", lambda victim: {**tiny_train_config(), "hydra": {"callbacks": {"x": opener(victim)}}}, "hydra"),
    ("hydra-run-dir", lambda victim: {**tiny_train_config(), "hydra": {"run": {"dir": "elsewhere"}}}, "hydra"),
    ("defaults-list", lambda victim: {"defaults": ["other", "_self_"], **tiny_train_config()}, "defaults"),
    ("target-in-a-list", lambda victim: with_nested("callback", opener(victim)), "training_plan.phases.0.settings"),
    ("partial", lambda victim: with_nested("_partial_", True), "_partial_"),
    ("args", lambda victim: with_nested("_args_", ["w"]), "_args_"),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_keys_that_run_code_are_refused_naming_the_file_and_key(case, project: Path):
    _, build, key = case
    victim = project / "victim.txt"
    entry = write_yaml(project / "configs" / "train.yaml", build(victim))
    with pytest.raises(UserError) as error:
        compose_file(entry)
    assert error.value.where == str(entry)
    assert key in error.value.problem
    assert not victim.exists()


def test_a_fragment_with_a_hydra_block_is_refused_naming_the_fragment(project: Path):
    fragment = write_yaml(project / "configs" / "extra.yaml", {"hydra": {"callbacks": {"x": opener(project / "v")}}})
    config = tiny_train_config(additional_config_paths=["configs/extra.yaml"])
    entry = write_yaml(project / "configs" / "train.yaml", config)
    with pytest.raises(UserError, match="'hydra' is not accepted") as error:
        compose_file(entry)
    assert error.value.where == str(fragment.resolve())


def test_a_field_merely_named_like_hydra_deeper_down_is_data(project: Path):
    config = tiny_train_config()
    config["training_plan"]["hydra"] = 1
    entry = write_yaml(project / "configs" / "train.yaml", config)
    assert compose_file(entry)["training_plan"]["hydra"] == 1
