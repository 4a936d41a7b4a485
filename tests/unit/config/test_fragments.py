"""additional_config_paths: fragments merge disjointly before expansion; overlaps and nesting are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config, compose_config
from sequifier.config.errors import UserError
from sequifier.config.fragments import compose_file


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def split_config(project: Path) -> Path:
    """The tiny config with its model and dataset moved into two fragments."""
    config = tiny_train_config()
    model, dataset = config.pop("model"), config.pop("dataset")
    write_yaml(project / "configs" / "model.yaml", {"model": model})
    write_yaml(project / "configs" / "dataset.yaml", {"dataset": dataset})
    config["additional_config_paths"] = ["configs/model.yaml", "configs/dataset.yaml"]
    return write_yaml(project / "configs" / "train.yaml", config)


def rewrite_entry(entry: Path, fragments: list[str]) -> None:
    """The entry file without model and dataset, listing `fragments`."""
    data = tiny_train_config()
    data.pop("model")
    data.pop("dataset")
    data["additional_config_paths"] = fragments
    write_yaml(entry, data)


def test_fragments_compose_into_the_same_config_as_one_file(project: Path):
    entry = split_config(project)
    whole = canonical_config(tiny_train_config())
    composed = canonical_config(compose_config(entry, []))
    assert composed.model == whole.model
    assert composed.dataset_training == whole.dataset_training
    assert composed.additional_config_paths == ("configs/model.yaml", "configs/dataset.yaml")


def test_a_single_string_path_is_accepted_and_children_merge_under_a_container(project: Path):
    config = tiny_train_config()
    interface = config["model"].pop("interface")
    write_yaml(project / "configs" / "interface.yaml", {"model": {"interface": interface}})
    config["additional_config_paths"] = "configs/interface.yaml"
    entry = write_yaml(project / "configs" / "train.yaml", config)
    assert compose_file(entry)["model"]["interface"] == interface


def test_cli_overrides_apply_after_composition(project: Path):
    entry = split_config(project)
    config = canonical_config(compose_config(entry, ["model.backbone.architecture.num_layers=3"]))
    assert config.model.backbone.architecture.num_layers == 3


def test_a_field_set_twice_names_the_field_and_both_files(project: Path):
    entry = split_config(project)
    write_yaml(project / "configs" / "extra.yaml", {"global_training": {"batch_size": 4}})
    rewrite_entry(entry, ["configs/model.yaml", "configs/dataset.yaml", "configs/extra.yaml"])
    with pytest.raises(UserError) as error:
        compose_file(entry)
    assert error.value.where == "global_training.batch_size"
    assert "train.yaml" in error.value.problem and "extra.yaml" in error.value.problem


def test_overlap_between_two_fragments_names_both(project: Path):
    entry = split_config(project)
    write_yaml(project / "configs" / "other-model.yaml", {"model": {"backbone": {"architecture": {"dim_model": 8}}}})
    rewrite_entry(entry, ["configs/model.yaml", "configs/other-model.yaml", "configs/dataset.yaml"])
    with pytest.raises(UserError) as error:
        compose_file(entry)
    assert error.value.where == "model.backbone.architecture.dim_model"
    assert "model.yaml" in error.value.problem and "other-model.yaml" in error.value.problem


def test_nested_fragments_are_refused(project: Path):
    entry = split_config(project)
    write_yaml(
        project / "configs" / "dataset.yaml",
        {"dataset": tiny_train_config()["dataset"], "additional_config_paths": ["configs/x.yaml"]},
    )
    with pytest.raises(UserError, match="cannot include further fragments"):
        compose_file(entry)


def test_a_fragment_listed_twice_is_refused(project: Path):
    entry = split_config(project)
    rewrite_entry(entry, ["configs/model.yaml", "configs/dataset.yaml", "./configs/model.yaml"])
    with pytest.raises(UserError, match="listed twice"):
        compose_file(entry)


def test_a_missing_fragment_names_the_path(project: Path):
    data = tiny_train_config(additional_config_paths=["configs/absent.yaml"])
    entry = write_yaml(project / "configs" / "train.yaml", data)
    with pytest.raises(UserError, match="fragment 'configs/absent.yaml' does not exist at"):
        compose_file(entry)
    write_yaml(entry, tiny_train_config(additional_config_paths=["configs"]))
    with pytest.raises(UserError, match="fragment 'configs' is a folder, not a file at"):
        compose_file(entry)


def test_fragments_resolve_against_project_root(project: Path):
    (project / "sub").mkdir()
    config = tiny_train_config(project_root="sub")
    model = config.pop("model")
    write_yaml(project / "sub" / "model.yaml", {"model": model})
    config["additional_config_paths"] = ["model.yaml"]
    entry = write_yaml(project / "configs" / "train.yaml", config)
    assert compose_file(entry)["model"] == model
