"""`sequifier make`: the whole project or nothing, and clear errors for targets it cannot use."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import sequifier.project.scaffold as scaffold
from sequifier.config.errors import UserError
from sequifier.infer.runner import resolve_model_path


def _entries(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_a_demo_project_has_its_configs_data_and_facts(tmp_path, capsys):
    scaffold.make_project(tmp_path / "proj", demo=True)
    project = tmp_path / "proj"
    assert _entries(project / "configs") == ["infer.yaml", "preprocess.yaml", "train.yaml"]
    assert (project / "data" / "demo.parquet").is_file() and (project / scaffold.DEMO_FACTS).is_file()
    assert 'model_name: "proj-model"' in (project / "configs" / "train.yaml").read_text()
    assert "loss floor" in capsys.readouterr().out
    assert _entries(tmp_path) == ["proj"]


def test_the_current_empty_folder_becomes_the_project_named_after_it(tmp_path, monkeypatch):
    project = tmp_path / "mine"
    project.mkdir()
    monkeypatch.chdir(project)
    scaffold.make_project(Path("."), demo=False)
    assert 'model_name: "mine-model"' in (project / "configs" / "train.yaml").read_text()
    assert (project / "data").is_dir()


@pytest.mark.parametrize("target, said", [("a-file", "is a file;"), ("a-file/proj", "/a-file is a file, not a folder")])
def test_a_file_in_the_way_is_a_clear_error(tmp_path, target, said):
    (tmp_path / "a-file").write_text("the user's")
    with pytest.raises(UserError) as caught:
        scaffold.make_project(tmp_path / target, demo=False)
    assert str(tmp_path / target) in str(caught.value) and said in str(caught.value)
    assert (tmp_path / "a-file").read_text() == "the user's"
    assert _entries(tmp_path) == ["a-file"]


def test_a_failure_while_writing_leaves_nothing_behind(tmp_path, monkeypatch):
    def full_disk(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(scaffold, "write_demo_data", full_disk)
    with pytest.raises(UserError) as caught:
        scaffold.make_project(tmp_path / "proj", demo=True)
    assert "No space left on device" in str(caught.value) and "nothing was created" in str(caught.value)
    assert _entries(tmp_path) == []
    scaffold.make_project(tmp_path / "proj", demo=False)  # and the name is free for the next try
    assert (tmp_path / "proj" / "configs" / "train.yaml").is_file()


@pytest.mark.parametrize("name", ["x: y", "#c", "p[1]", "&a*b", "ünï cödé"])
def test_a_project_name_that_yaml_or_a_glob_would_read_otherwise_keeps_its_model_name(tmp_path, name):
    scaffold.make_project(tmp_path / name, demo=False)
    configs = tmp_path / name / "configs"
    train = OmegaConf.load(configs / "train.yaml")
    assert train.model_name == f"{name}-model"
    model = tmp_path / name / "models" / f"{name}-model-best-3.onnx"
    model.parent.mkdir()
    model.write_bytes(b"onnx")
    assert resolve_model_path(tmp_path / name, OmegaConf.load(configs / "infer.yaml").model_path) == model


@pytest.mark.parametrize("name", [".hidden", " spaced", "tab\tx"])
def test_a_project_name_that_gives_no_valid_model_name_is_refused_before_anything_is_made(tmp_path, name):
    with pytest.raises(UserError, match="cannot name the model's files"):
        scaffold.make_project(tmp_path / name, demo=False)
    assert _entries(tmp_path) == []
