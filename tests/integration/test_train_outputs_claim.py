"""Before loading any data, a run claims its outputs: the folders take files, and no other run has the name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tiny_train_config
from run_helpers import project_with

from sequifier import cli
from sequifier.training import claim

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


def test_an_emptied_owner_marker_is_named_as_such_and_writing_the_name_back_lets_the_run_go_on(
    tmp_path, monkeypatch, capsys
):
    project = project_with(tmp_path, "project", tiny_train_config())
    name = tiny_train_config()["model_name"]
    marker = project / "logs" / name / ".model_name"
    marker.parent.mkdir(parents=True)
    marker.write_text("")
    error = _refusal(project, monkeypatch, capsys)
    assert f"{marker}: is empty" in error and "choose another model_name" not in error
    marker.write_text(name + "\n")
    assert cli.main(["train", "training_plan.epochs=1"]) == 0


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


def test_a_run_refused_by_a_lock_taken_after_it_found_no_folder_leaves_that_folder(tmp_path, monkeypatch, capsys):
    """The other run made and locked the folder in between: removing it would let a third run in beside it."""
    project = project_with(tmp_path, "project", tiny_train_config())
    folder = project / "checkpoints" / tiny_train_config()["model_name"]
    holders = []

    def locked_by_another_run_meanwhile(made: Path) -> None:
        holders.append(
            subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(made)], stdout=subprocess.PIPE, text=True)
        )
        assert holders[0].stdout.readline().strip() == "held"

    monkeypatch.setattr(claim, "_refuse_folders_named_as_checkpoints", locked_by_another_run_meanwhile)
    try:
        assert "is being trained by another process of this project" in _refusal(project, monkeypatch, capsys)
        assert folder.is_dir()
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()


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


def test_a_folder_where_a_checkpoint_goes_and_a_link_to_nothing_are_refused_before_training(
    tmp_path, monkeypatch, capsys
):
    project = project_with(tmp_path, "project", tiny_train_config())
    in_the_way = project / "checkpoints" / "tiny" / "epoch-1.pt"
    in_the_way.mkdir(parents=True)
    error = _refusal(project, monkeypatch, capsys)
    assert f"{in_the_way}: is a folder where training writes a checkpoint file" in error
    in_the_way.rmdir()
    (project / "models").symlink_to(tmp_path / "gone")
    error = _refusal(project, monkeypatch, capsys)
    assert f"{project / 'models'} is a link to {tmp_path / 'gone'}, which does not exist" in error
    assert not list(project.glob("checkpoints/*/*.pt")) and not (project / "logs" / "tiny").exists()


LIMITED_WRITES = """
import resource, sys
from sequifier.cli import entry
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
sys.argv = ["sequifier", "train"]
entry()
"""


def test_a_checkpoint_the_file_system_refuses_is_one_line_and_a_rerun_resumes_or_trains(tmp_path):
    """Files over RLIMIT_FSIZE fail to write (EFBIG) as on a full disk: the run names the file and ends with exit 2,
    leaves no temp file, and a rerun without the limit finishes the run."""
    project = project_with(tmp_path, "project", tiny_train_config() | {"training_plan": {"epochs": 2}})
    limited = subprocess.run(
        [sys.executable, "-c", LIMITED_WRITES, str(16 * 2**10)], cwd=project, capture_output=True, text=True
    )
    assert limited.returncode == 2, limited.stderr[-3000:]
    error = limited.stderr.strip().splitlines()[-1]
    assert "Traceback" not in limited.stderr
    assert error.startswith(f"error: {project / 'checkpoints' / 'tiny' / 'epoch-1.pt'}: ") and "resumes" in error
    assert not [p for p in project.rglob("*") if p.name.endswith(".tmp")]
    again = subprocess.run(
        [sys.executable, "-m", "sequifier", "train", "global_training.resume.policy=if_exists"],
        cwd=project, capture_output=True, text=True,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert (project / "models" / "tiny-last-2.onnx").is_file()


def test_a_record_folder_that_cannot_be_made_is_refused_and_commands_of_one_second_get_one_each(
    tmp_path, monkeypatch, capsys
):
    from sequifier.commands import record_folder

    project = project_with(tmp_path, "project", tiny_train_config())
    (project / "afile.txt").write_text("mine")
    monkeypatch.chdir(project)
    assert cli.main(["train", "hydra.run.dir=afile.txt/sub"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (
        f"error: hydra.run.dir: {project / 'afile.txt' / 'sub'}: {project / 'afile.txt'} is a file, not a folder, "
        "so the run's record cannot go there"
    )
    monkeypatch.setattr(record_folder.time, "strftime", lambda form: "2026-01-01" if "Y" in form else "10-00-00")
    first, second = (record_folder.run_folder_settings({}) for _ in range(2))
    assert first != second
    assert sorted(p.name for p in (project / "outputs" / "2026-01-01").iterdir()) == ["10-00-00", "10-00-00-2"]
