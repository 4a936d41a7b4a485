"""A resume that cannot be exact is refused in one line naming the config path (or data part) and both values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from conftest import REFERENCE_DIR, run_sequifier, tiny_train_config, write_yaml

RESUME = "global_training.resume.policy=if_exists"


@pytest.fixture(scope="module")
def trained_once(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("trained") / "project"
    shutil.copytree(REFERENCE_DIR, project)
    write_yaml(project / "configs" / "train.yaml", tiny_train_config(training_plan={"epochs": 1}))
    result = run_sequifier(["train"], project)
    assert result.returncode == 0, result.stderr
    assert (project / "checkpoints" / "tiny" / "latest.pt").is_file()
    return project


@pytest.fixture
def trained(trained_once: Path, tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(trained_once, project)
    return project


def refused(project: Path, *overrides: str) -> str:
    result = run_sequifier(["train", *overrides], project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_changed_model_width_is_refused(trained: Path):
    line = refused(trained, RESUME, "model.backbone.architecture.dim_model=32")
    assert "model.backbone.architecture.dim_model: is 32 but" in line and "written with 16" in line


def test_a_value_set_where_the_checkpoint_had_null_is_refused_in_config_spelling(trained: Path):
    line = refused(trained, RESUME, "global_training.gradient_clip=0.5")
    assert "global_training.gradient_clip: is 0.5 but" in line and "written with null;" in line


def test_more_epochs_in_a_phase_are_refused(trained: Path):
    line = refused(trained, RESUME, "training_plan.epochs=3")
    assert "training_plan.phases[0].epochs: is 3 but" in line and "written with 1" in line


def test_changed_data_is_refused(trained: Path):
    metadata = trained / "configs" / "metadata_configs" / "events.json"
    data = json.loads(metadata.read_text())
    data["selected_columns_statistics"]["amount"]["mean"] += 1.0
    metadata.write_text(json.dumps(data))
    line = refused(trained, RESUME)
    assert "dataset_training.default.parts.default.metadata_config_path" in line and "data differs" in line


def test_other_windows_under_the_same_metadata_are_refused_and_the_same_bytes_rewritten_resume(trained: Path):
    split = trained / "data" / "events-split0.parquet"
    table = pq.read_table(split)
    pq.write_table(table, split)  # the same windows, a new file
    result = run_sequifier(["train", RESUME], trained)
    assert result.returncode == 0, result.stderr
    newest = table.column("0").to_pylist()
    position = next(i for i, value in enumerate(newest) if value != newest[0])
    newest[0], newest[position] = newest[position], newest[0]  # two windows' newest values swapped
    pq.write_table(table.set_column(table.schema.get_field_index("0"), "0", pa.array(newest)), split)
    line = refused(trained, RESUME)
    assert "dataset_training.default.parts.default.metadata_config_path" in line
    assert "train split holds other windows" in line and "same metadata" in line


def test_required_needs_an_existing_checkpoint(trained: Path):
    line = refused(trained, "global_training.resume.policy=required", "global_training.resume.checkpoint_path=nope.pt")
    assert "global_training.resume.checkpoint_path" in line and "nope.pt does not exist" in line
    line = refused(trained, "global_training.resume.policy=required")
    assert "global_training.resume.checkpoint_path: is required with policy required" in line
    line = refused(trained, "global_training.resume.policy=if_exists", "global_training.resume.checkpoint_path=configs")
    assert "configs is a folder, not a file" in line


def test_if_exists_starts_fresh_without_a_checkpoint_and_resumes_a_finished_run_to_the_same_models(trained: Path):
    models = sorted(p.name for p in (trained / "models").iterdir())
    result = run_sequifier(["train", RESUME], trained)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (trained / "models").iterdir()) == models
    result = run_sequifier(["train", RESUME, "model_name=other"], trained)
    assert result.returncode == 0, result.stderr
    assert "resuming" not in (trained / "logs" / "other" / "other.log").read_text()
    assert (trained / "checkpoints" / "other" / "latest.pt").is_file()


def test_a_fresh_run_of_another_config_sets_the_earlier_checkpoints_aside_and_one_of_the_same_config_does_not(
    trained: Path,
):
    folder = trained / "checkpoints" / "tiny"
    same = run_sequifier(["train"], trained)
    assert same.returncode == 0, same.stderr
    assert "held checkpoints" not in same.stdout and [p for p in folder.iterdir() if p.is_dir()] == []

    earlier = {path.name: path.read_bytes() for path in folder.glob("*.pt")}
    earlier_models = {path.name: path.read_bytes() for path in (trained / "models").iterdir()}
    another_model = trained / "models" / "tiny-embedding-best-1.onnx"  # the model `tiny-embedding`, not tiny's
    another_model.write_bytes(b"another model's")
    run_id = torch.load(folder / "latest.pt", weights_only=True)["run_id"]
    other = run_sequifier(["train", "global_training.learning_rate=0.001"], trained)
    assert other.returncode == 0, other.stderr
    aside = folder / f"earlier-{run_id}"
    assert "held checkpoints of a run of another config or data (first difference: global_training" in other.stdout
    assert {path.name: path.read_bytes() for path in aside.glob("*.pt")} == earlier
    models_aside = trained / "models" / f"earlier-{run_id}"
    assert f"its exported models that this run's would replace are in {models_aside}" in other.stdout
    assert {path.name: path.read_bytes() for path in models_aside.iterdir()} == earlier_models
    assert set(earlier_models) <= {path.name for path in (trained / "models").iterdir()}  # this run's, same names
    assert another_model.read_bytes() == b"another model's"  # this run exports no embedding model
    latest = torch.load(folder / "latest.pt", weights_only=True)
    assert latest["run_id"] != run_id and latest["fingerprint"]["config"]["global_training.learning_rate"] == 0.001


def test_a_resume_from_another_folder_sets_aside_the_checkpoints_and_models_of_another_config_it_would_replace(
    trained: Path,
):
    other = run_sequifier(["train", "model_name=other", "global_training.learning_rate=0.001"], trained)
    assert other.returncode == 0, other.stderr
    folder = trained / "checkpoints" / "other"
    earlier = {path.name: path.read_bytes() for path in folder.glob("*.pt")}
    earlier_models = {path.name: path.read_bytes() for path in (trained / "models").glob("other-*")}
    run_id = torch.load(folder / "latest.pt", weights_only=True)["run_id"]
    resumed = run_sequifier(
        [
            "train",
            "model_name=other",
            "global_training.resume.policy=required",
            "global_training.resume.checkpoint_path=checkpoints/tiny/epoch-1.pt",
        ],
        trained,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "held checkpoints of a run of another config or data" in resumed.stdout
    assert {path.name: path.read_bytes() for path in (folder / f"earlier-{run_id}").glob("*.pt")} == earlier
    models_aside = trained / "models" / f"earlier-{run_id}"
    assert earlier_models and {path.name: path.read_bytes() for path in models_aside.iterdir()} == earlier_models
    assert {path.name for path in (trained / "models").glob("other-*")} == set(earlier_models)  # this run's


def test_a_fresh_run_sets_aside_exported_models_whose_checkpoints_are_gone(trained: Path):
    shutil.rmtree(trained / "checkpoints" / "tiny")
    earlier_models = {path.name: path.read_bytes() for path in (trained / "models").iterdir()}
    other = run_sequifier(["train", "global_training.learning_rate=0.001"], trained)
    assert other.returncode == 0, other.stderr
    (aside,) = [path for path in (trained / "models").iterdir() if path.is_dir()]
    assert aside.name.startswith("earlier-unknown-") and f"they are now in {aside}" in other.stdout
    assert earlier_models and {path.name: path.read_bytes() for path in aside.iterdir()} == earlier_models


@pytest.mark.parametrize("damage", ["latest.pt removed", "every checkpoint unreadable"])
def test_a_fresh_run_sets_aside_checkpoints_it_cannot_tell_by_latest_pt(damage: str, trained: Path):
    """Without a readable latest.pt the newest readable snapshot tells the run; with none, the files go aside."""
    folder = trained / "checkpoints" / "tiny"
    run_id = torch.load(folder / "latest.pt", weights_only=True)["run_id"]
    if damage == "latest.pt removed":
        (folder / "latest.pt").unlink()
    else:
        for path in folder.glob("*.pt"):
            path.write_bytes(path.read_bytes()[:1000])
    earlier = {path.name: path.read_bytes() for path in folder.glob("*.pt")}
    other = run_sequifier(["train", "model.backbone.architecture.dim_model=32"], trained)
    assert other.returncode == 0, other.stderr
    (aside,) = [path for path in folder.iterdir() if path.is_dir()]
    if damage == "latest.pt removed":
        assert aside.name == f"earlier-{run_id}" and "another config or data" in other.stdout
    else:
        assert aside.name.startswith("earlier-unreadable-") and "that this release cannot read" in other.stdout
    assert {path.name: path.read_bytes() for path in aside.glob("*.pt")} == earlier


def test_an_unreadable_latest_pt_is_refused_naming_the_newest_readable_snapshot_to_continue_from(trained: Path):
    folder = trained / "checkpoints" / "tiny"
    latest = folder / "latest.pt"
    latest.write_bytes(latest.read_bytes()[:50_000])  # as a crash or a copy may leave it
    (snapshot,) = [path for path in folder.glob("*-*.pt")]
    line = refused(trained, RESUME)
    assert f"{latest}: not a readable checkpoint" in line
    way_on = f"global_training.resume.checkpoint_path={snapshot.relative_to(trained)}"
    assert way_on in line and line.endswith("or start anew with global_training.resume.policy=never")
    assert run_sequifier(["train", RESUME, way_on], trained).returncode == 0

    latest.write_bytes(latest.read_bytes()[:50_000])
    snapshot.write_bytes(b"")
    assert refused(trained, RESUME).endswith("; start anew with global_training.resume.policy=never")
