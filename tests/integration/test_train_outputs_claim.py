"""Before loading any data, a run claims its outputs: the folders take files, and no other run has the name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tiny_train_config
from run_helpers import project_with

from sequifier import cli

HOLD_LOCK = """
import fcntl, os, sys, time
descriptor = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(descriptor, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(120)
"""


def _refusal(project: Path, monkeypatch, capsys) -> str:
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) as stop:
        cli.main(["train"])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error, error
    return error


@pytest.mark.parametrize("blocked", ["models", "logs", "checkpoints"])
def test_an_output_folder_it_cannot_make_is_refused_before_training(blocked, tmp_path, monkeypatch, capsys):
    project = project_with(tmp_path, "project", tiny_train_config())
    (project / blocked).write_text("a file of the user's")
    error = _refusal(project, monkeypatch, capsys)
    assert str(project / blocked) in error and "training writes its outputs here and cannot" in error
    assert (project / blocked).read_text() == "a file of the user's"
    assert not list(project.glob("checkpoints/*/*.pt"))


def test_a_model_name_another_process_trains_is_refused(tmp_path, monkeypatch, capsys):
    project = project_with(tmp_path, "project", tiny_train_config())
    folder = project / "checkpoints" / tiny_train_config()["model_name"]
    folder.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        error = _refusal(project, monkeypatch, capsys)
        assert "is being trained by another process of this project" in error
    finally:
        holder.kill()
        holder.wait()
    monkeypatch.chdir(project)
    assert cli.main(["train", "training_plan.epochs=1"]) == 0  # the lock went with its process
    assert list((project / "models").glob("*.onnx"))


def test_a_model_file_the_disk_refuses_after_training_is_one_line_and_a_resume_exports_it(
    tmp_path, monkeypatch, capsys
):
    project = project_with(tmp_path, "project", tiny_train_config())
    in_the_way = project / "models" / "tiny-last-1.onnx"
    in_the_way.mkdir(parents=True)
    (in_the_way / "kept.txt").write_text("the user's")
    error = _refusal(project, monkeypatch, capsys)
    assert str(in_the_way) in error and "cannot write the exported model" in error, error
    assert (project / "checkpoints" / "tiny" / "latest.pt").is_file()
    assert (in_the_way / "kept.txt").read_text() == "the user's"
    (in_the_way / "kept.txt").unlink()
    in_the_way.rmdir()
    assert cli.main(["train", "global_training.resume.policy=if_exists"]) == 0
    assert in_the_way.is_file()
