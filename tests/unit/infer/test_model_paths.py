"""Which model file a `model_path` names: the file itself, else the newest match of its glob pattern."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sequifier.config.errors import UserError
from sequifier.infer.route import TrainingRoute
from sequifier.infer.runner import resolve_model_path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose own path holds glob characters, with two models of one name."""
    root = tmp_path / "runs[1]*"
    (root / "models").mkdir(parents=True)
    for epoch, when in ((1, 1_000_000), (2, 2_000_000)):
        model = root / "models" / f"m[a]-best-{epoch}.onnx"
        model.write_bytes(b"onnx")
        os.utime(model, (when, when))
    return root


def test_a_file_named_with_glob_characters_is_that_file(project: Path):
    assert resolve_model_path(project, "models/m[a]-best-1.onnx") == project / "models" / "m[a]-best-1.onnx"


def test_a_pattern_under_a_project_path_with_glob_characters_picks_the_newest_match(project: Path):
    assert resolve_model_path(project, "models/m?a?-best-*.onnx") == project / "models" / "m[a]-best-2.onnx"


def test_a_pattern_without_a_match_names_the_config_field(project: Path):
    with pytest.raises(UserError, match="no model file matches") as error:
        resolve_model_path(project, "models/other-*.onnx")
    assert error.value.where == "model_path"


def test_a_pattern_matching_a_name_that_is_not_utf8_is_named(project: Path):
    newest = project / "models" / "zz\udcff-best-3.onnx"
    newest.write_bytes(b"onnx")
    os.utime(newest, (3_000_000, 3_000_000))
    with pytest.raises(UserError, match=r"matches '.*zz\?-best-3.onnx', whose name is not UTF-8") as error:
        resolve_model_path(project, "models/*-best-*.onnx")
    assert error.value.where == "model_path"


def test_brackets_that_match_nothing_as_a_class_are_taken_as_themselves(project: Path, capsys):
    """A sweep names its models `m-betas=[0.9,0.99]`: as a glob, the brackets would be a class of characters."""
    assert resolve_model_path(project, "models/m[a]-best-*.onnx") == project / "models" / "m[a]-best-2.onnx"
    assert "'[', ']' and '?' taken as themselves, it matches m[a]-best-2.onnx" in capsys.readouterr().out


def test_the_training_routes_default_pattern_takes_the_model_name_literally(project: Path):
    """`m?a` must not pick another model whose name the `?` would match, however new that one is."""
    other = project / "models" / "mXa-best-9.onnx"
    other.write_bytes(b"onnx")
    mine = project / "models" / "m?a-best-1.onnx"
    mine.write_bytes(b"onnx")
    os.utime(mine, (1_000, 1_000))
    route = TrainingRoute(
        source="train.yaml", metadata_path=project / "meta.json", stem="m?a", expected={}, unset_exports={}
    )
    assert resolve_model_path(project, route.default_model_path("generative")) == mine
