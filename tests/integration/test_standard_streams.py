"""A command whose stdout or stderr is closed, or whose reader goes away, finishes its work with exit 0; a
working folder Hydra cannot name literally, or a locale that cannot read its name, is one line and exit 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REFERENCE_DIR, run_sequifier, tiny_train_config, write_yaml

PREPROCESS = [sys.executable, "-m", "sequifier", "preprocess", "--config-path", "configs/preprocess-parquet.yaml"]
OUTPUTS = ("events-split0.parquet", "events-split1.parquet", "events-split2.parquet")


def fresh_project(tmp_path: Path, name: str = "project") -> Path:
    project = tmp_path / name
    shutil.copytree(REFERENCE_DIR, project)
    for output in OUTPUTS:
        (project / "data" / output).unlink()
    return project


def assert_preprocessed(project: Path) -> None:
    assert all((project / "data" / output).is_file() for output in OUTPUTS)


def test_a_reader_that_goes_away_after_the_first_line_loses_nothing(tmp_path: Path):
    project = fresh_project(tmp_path)
    process = subprocess.Popen(PREPROCESS, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout.readline()
    process.stdout.close()  # as `| head -1` does
    assert process.wait(timeout=300) == 0
    assert_preprocessed(project)


def test_a_closed_stdout_or_stderr_loses_nothing(tmp_path: Path):
    for closed in ("1", "2"):
        project = fresh_project(tmp_path, f"closed-{closed}")
        command = " ".join(PREPROCESS) + f" {closed}>&-"
        result = subprocess.run(["bash", "-c", command], cwd=project, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Traceback" not in result.stdout + result.stderr
        assert_preprocessed(project)


def test_a_working_folder_whose_path_holds_an_interpolation_is_refused_before_hydra_runs(tmp_path: Path):
    project = tmp_path / "p${x}" / "project"
    shutil.copytree(REFERENCE_DIR, project)
    write_yaml(project / "configs" / "train.yaml", tiny_train_config())
    result = run_sequifier(["train"], project)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {project}: Hydra reads '${{'") and "Traceback" not in result.stderr
    assert "'${'" in result.stderr and not (project / "models").exists()


def test_a_locale_that_cannot_read_the_working_folders_name_is_named(tmp_path: Path):
    folder = tmp_path / "ünï"
    folder.mkdir()
    ascii_locale = {key: value for key, value in os.environ.items() if not key.startswith(("LC_", "LANG"))}
    ascii_locale |= {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "sequifier", "preprocess"], cwd=folder, env=ascii_locale, capture_output=True
    )
    assert result.returncode == 2
    assert b"the locale is not UTF-8" in result.stderr and b"PYTHONUTF8=1" in result.stderr
