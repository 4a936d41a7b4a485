"""`--help`, `train --help` and config errors load nothing heavy; training on pt shards never loads pyarrow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tiny_train_config, write_yaml

HEAVY = ("torch", "pyarrow", "matplotlib", "onnx", "onnxruntime", "onnxscript", "tensorboard")
PROBE = """
import contextlib, io, json, sys
from sequifier import cli
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = cli.main(sys.argv[1:])
    except SystemExit as ended:
        code = ended.code
print(json.dumps({"code": code, "loaded": sorted(m for m in sys.modules if m.split(".")[0] in %r)}))
""" % (HEAVY,)


def loaded_by(args: list[str], cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_command_line_loads_nothing_heavy(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", "import sys, sequifier.cli; print(sorted(sys.modules))"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert not [m for m in eval(done.stdout) if m.split(".")[0] in HEAVY]


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["train", "--config-path", "nonexistent.yaml"]])
def test_help_and_a_missing_config_load_nothing_heavy(tmp_path: Path, args):
    result = loaded_by(args, tmp_path)
    assert result["code"] != 1 and result["loaded"] == []


def test_a_config_error_is_reported_before_anything_heavy_loads(tmp_path: Path):
    write_yaml(tmp_path / "configs" / "train.yaml", tiny_train_config())
    result = loaded_by(["train", "global_training.batch_size=-3"], tmp_path)
    assert result["code"] == 2 and result["loaded"] == []


def test_training_on_pt_shards_never_loads_pyarrow(reference_project: Path):
    config = tiny_train_config()
    config["dataset"]["part"]["metadata_config_path"] = "configs/metadata_configs/events_pt.json"
    config["global_training"]["read_format"] = "pt"
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = loaded_by(["train"], reference_project)
    assert result["code"] in (0, None)
    assert "torch" in result["loaded"] and "onnx" in result["loaded"]  # the run trained and exported
    assert not [m for m in result["loaded"] if m.split(".")[0] == "pyarrow"]
