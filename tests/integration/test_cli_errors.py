"""Bad input gives one line naming the file or key, exit code 2 and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_sequifier, tiny_train_config, write_yaml


def _unknown_top_level(project: Path) -> list[str]:
    config = tiny_train_config()
    config["sed"] = 3
    write_yaml(project / "configs" / "train.yaml", config)
    return ["train"]


def _yaml_syntax(project: Path) -> list[str]:
    (project / "configs" / "train.yaml").write_text("model_name: x\nglobal_training: [1, 2\n")
    return ["train"]


def _missing_file(project: Path) -> list[str]:
    return ["train", "--config-path", "configs/nothing.yaml"]


def _train_with(override: str):
    """`sequifier train OVERRIDE` on the tiny config."""

    def case(project: Path) -> list[str]:
        write_yaml(project / "configs" / "train.yaml", tiny_train_config())
        return ["train", override]

    case.__name__ = override
    return case


def _missing_preprocess_config(project: Path) -> list[str]:
    return ["preprocess", "--config-path", "configs/absent.yaml"]


def _missing_infer_model(project: Path) -> list[str]:
    write_yaml(
        project / "configs" / "infer.yaml",
        {"model_path": "models/none.onnx", "data_path": "data/events-split2.parquet"},
    )
    return ["infer"]


def _named_pipe_as_metadata(project: Path) -> list[str]:
    write_yaml(project / "configs" / "train.yaml", tiny_train_config())
    metadata = project / "configs" / "metadata_configs" / "events.json"
    metadata.unlink()
    os.mkfifo(metadata)
    return ["train"]


def _named_pipe_as_model(project: Path) -> list[str]:
    os.mkfifo(project / "pipe.onnx")
    write_yaml(
        project / "configs" / "infer.yaml", {"model_path": "pipe.onnx", "data_path": "data/events-split2.parquet"}
    )
    return ["infer"]


def _named_pipe_as_input(project: Path) -> list[str]:
    os.mkfifo(project / "data" / "pipe")
    return ["preprocess", "--config-path", "configs/preprocess-parquet.yaml", "--data-path", "data/pipe"]


CASES = [
    (_unknown_top_level, ["sed", "did you mean 'seed'"]),
    (_yaml_syntax, ["train.yaml", "line 3"]),
    (_missing_file, ["configs/nothing.yaml", "not found"]),
    (_train_with("global_training.batch_size=abc"), ["global_training.batch_size", "'abc'"]),
    (
        _train_with("global_training.batchsize=8"),
        ["global_training.batchsize: unknown field (did you mean 'batch_size'?)"],
    ),
    (
        _train_with("global_training.epochs=3"),
        ["global_training.epochs: unknown field (did you mean training_plan.epochs?)"],
    ),
    (
        _train_with("global_training.precision=fp32"),
        ["global_training.precision: is a preset group, not a field", "with global_training/precision=fp32"],
    ),
    (
        _train_with("global_training.resume=if_exists"),
        ["global_training.resume: expected a mapping", "(did you mean global_training.resume.policy: if_exists?)"],
    ),
    (
        _train_with("training_plan.phases[0].epochs=2"),
        ["training_plan.phases: is not in the config file, which writes training_plan.epochs instead"],
    ),
    (
        _train_with("dataset.part.file_order=name"),
        ["dataset.part.file_order", "to set a field the file leaves out, write +dataset.part.file_order=name"],
    ),
    (_train_with("model=null"), ["model=null", "model is a section, set field by field (model.<field>=...)"]),
    (
        _train_with("additional_config_paths=[configs/missing.yaml]"),
        ["additional_config_paths=[configs/missing.yaml]", "list the fragments in the file"],
    ),
    (
        _train_with("model/backbone=nope"),
        ["model/backbone=nope", "there is no preset 'nope' in model/backbone", "small"],
    ),
    (_missing_preprocess_config, ["configs/absent.yaml"]),
    (_missing_infer_model, ["models/none.onnx", "does not exist"]),
    (_named_pipe_as_metadata, ["events.json is a named pipe (FIFO), not a regular file"]),
    (_named_pipe_as_model, ["pipe.onnx: model file is a named pipe (FIFO), not a regular file"]),
    (_named_pipe_as_input, ["data/pipe: is a named pipe (FIFO), not a data file or folder"]),
]


@pytest.mark.parametrize("make_case, fragments", CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_bad_input_is_one_clear_line(reference_project: Path, make_case, fragments):
    result = run_sequifier(make_case(reference_project), reference_project)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert not (reference_project / "models").exists()


def test_a_misspelt_field_the_file_has_gets_a_did_you_mean_and_no_advice_to_add_the_typo(reference_project: Path):
    result = run_sequifier(_train_with("model.interface.decoder.typ=mlp")(reference_project), reference_project)
    assert result.returncode == 2
    assert (
        result.stderr.strip() == "error: model.interface.decoder.typ: is not in the config file (did you mean 'type'?)"
    )


def test_several_problems_are_one_error_line_each_and_leave_no_checkpoint_folder(reference_project: Path):
    overrides = ["global_training.learning_rate=0", "global_training.batch_size=0"]
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    result = run_sequifier(["train", *overrides], reference_project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("error: global_training.") for line in lines), result.stderr
    refused = run_sequifier(
        ["train", "global_training.resume.policy=required", "+global_training.resume.checkpoint_path=none.pt"],
        reference_project,
    )
    assert refused.returncode == 2, refused.stderr
    assert not (reference_project / "checkpoints" / "tiny").exists()


@pytest.mark.parametrize("command", [["make", "p"], ["preprocess"], ["train"]])
def test_a_working_folder_removed_under_the_shell_is_named(tmp_path: Path, command):
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && exec "{sys.executable}" -m sequifier "$@"'
    result = subprocess.run(["bash", "-c", script, "bash", *command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "error: working folder: no longer exists (it was removed after the shell entered it); cd into an existing "
        "folder and run again"
    )
