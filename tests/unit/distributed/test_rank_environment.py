"""What a process reads from the variables a launcher exports: its rank only as a rank of a whole group, and numbers
that are not whole numbers named as the variables they are."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from sequifier.config.errors import UserError
from sequifier.distributed.environment import (
    hydra_settings_of_this_rank,
    refuse_partial_torchrun_variables,
    this_rank,
)


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch: pytest.MonkeyPatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def test_a_stray_rank_without_the_group_is_no_rank(monkeypatch: pytest.MonkeyPatch):
    """A RANK left in the shell would otherwise make a plain run keep its record and summary to itself."""
    monkeypatch.setenv("RANK", "1")
    assert this_rank() == 0 and hydra_settings_of_this_rank() == ()
    with pytest.raises(UserError) as refused:
        refuse_partial_torchrun_variables(2)
    assert refused.value.where == "global_training.distributed"
    assert "sets RANK but not WORLD_SIZE or LOCAL_RANK" in refused.value.problem
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert this_rank() == 1 and hydra_settings_of_this_rank()[0] == "hydra.output_subdir=null"
    refuse_partial_torchrun_variables(2)


@pytest.mark.parametrize("value", ["x", "", "-1", "1.5"])
def test_a_rank_that_is_no_whole_number_is_named(value: str, monkeypatch: pytest.MonkeyPatch):
    for name, given in (("RANK", value), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")):
        monkeypatch.setenv(name, given)
    with pytest.raises(UserError) as refused:
        this_rank()
    assert refused.value.where == "RANK"
    assert refused.value.problem.startswith(f"is {value!r} in the environment, but torchrun sets it to a whole number")


@pytest.mark.parametrize(
    "variables, named, problem",
    [
        ({"RANK": "2", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, "RANK", "is 2 in the environment, but WORLD_SIZE is 2"),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2"}, "LOCAL_RANK", "is 2 in the environment, but WORLD_SIZE"),
        (
            {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "1"},
            "LOCAL_RANK",
            "is 1 in the environment, but LOCAL_WORLD_SIZE is 1",
        ),
        (
            {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "4"},
            "LOCAL_WORLD_SIZE",
            "is 4 in the environment, but WORLD_SIZE is 1",
        ),
    ],
)
def test_ranks_no_launcher_would_set_together_are_named(variables, named, problem, monkeypatch: pytest.MonkeyPatch):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(UserError) as refused:
        this_rank()
    assert refused.value.where == named and refused.value.problem.startswith(problem)


def test_the_last_rank_of_a_group_is_its_rank(monkeypatch: pytest.MonkeyPatch):
    for name, value in {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    assert this_rank() == 3


def test_a_rank_removes_the_empty_folders_of_killed_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Under torchrun a rank's folder is removed at its exit, which a SIGKILL skips: the next rank removes it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name, value in (("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1")):
        monkeypatch.setenv(name, value)
    ended = subprocess.Popen(["true"])
    ended.wait()
    killed, alive = tmp_path / f"sequifier-rank-1-{ended.pid}", tmp_path / f"sequifier-rank-1-{os.getpid()}"
    holding = tmp_path / f"sequifier-rank-2-{ended.pid}"
    for folder in (killed, alive, holding):
        folder.mkdir()
    (holding / "a file").write_text("kept")
    settings = hydra_settings_of_this_rank()
    assert f"sequifier-rank-1-{os.getpid()}" in settings[1]
    assert not killed.exists() and alive.is_dir() and (holding / "a file").is_file()
