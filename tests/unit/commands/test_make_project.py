"""`sequifier make`: the whole project or nothing, and clear errors for targets it cannot use."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import sequifier.project.scaffold as scaffold
from sequifier.config.errors import UserError


def _entries(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_a_demo_project_has_its_configs_data_and_facts(tmp_path, capsys):
    scaffold.make_project(tmp_path / "proj", demo=True)
    project = tmp_path / "proj"
    assert _entries(project / "configs") == ["infer.yaml", "preprocess.yaml", "train.yaml"]
    assert (project / "data" / "demo.parquet").is_file() and (project / scaffold.DEMO_FACTS).is_file()
    assert "model_name: proj-model" in (project / "configs" / "train.yaml").read_text()
    assert "loss floor" in capsys.readouterr().out
    assert _entries(tmp_path) == ["proj"]


def test_the_current_empty_folder_becomes_the_project_named_after_it(tmp_path, monkeypatch):
    project = tmp_path / "mine"
    project.mkdir()
    monkeypatch.chdir(project)
    scaffold.make_project(Path("."), demo=False)
    assert "model_name: mine-model" in (project / "configs" / "train.yaml").read_text()
    assert (project / "data").is_dir()


@pytest.mark.parametrize("target", ["a-file", "a-file/proj"])
def test_a_file_in_the_way_is_a_clear_error(tmp_path, target):
    (tmp_path / "a-file").write_text("the user's")
    with pytest.raises(UserError) as caught:
        scaffold.make_project(tmp_path / target, demo=False)
    assert str(tmp_path / target) in str(caught.value)
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
