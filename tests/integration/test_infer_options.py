"""Infer options and disagreements with the contract.

Options: data forms, sampling, several models and globs, the training-config route.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from conftest import REFERENCE_DIR, tiny_train_config, write_yaml
from infer_helpers import GENERATIVE, METADATA, SPLIT, export_all, infer, outputs

from sequifier.config.errors import UserError
from sequifier.infer.runner import run_inference

PT_SPLIT = REFERENCE_DIR / "data" / "events_pt-split2"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("options")
    export_all(folder)
    return folder


def _predictions(project: Path, model: str = GENERATIVE) -> dict[str, np.ndarray]:
    table = outputs(project, "predictions", model)
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}


def test_pt_shard_folders_and_csv_read_like_parquet_and_read_format_must_match(project: Path):
    infer(project, GENERATIVE, data_path=PT_SPLIT, read_format="pt")
    from_pt = _predictions(project)
    infer(project, GENERATIVE)
    from_parquet = _predictions(project)
    pacsv.write_csv(pq.read_table(SPLIT), project / "split.csv")
    infer(project, GENERATIVE, data_path=project / "split.csv", read_format="csv")
    for name, values in _predictions(project).items():
        np.testing.assert_array_equal(values, from_parquet[name])
    order = np.lexsort((from_pt["itemPosition"], from_pt["sequenceId"]))
    reference = np.lexsort((from_parquet["itemPosition"], from_parquet["sequenceId"]))
    np.testing.assert_array_equal(from_pt["event"][order], from_parquet["event"][reference])
    np.testing.assert_allclose(from_pt["amount"][order], from_parquet["amount"][reference], atol=1e-5)
    with pytest.raises(UserError, match=r"read_format: is 'csv', but .* is read as parquet by its suffix \(.csv"):
        infer(project, GENERATIVE, read_format="csv")


def test_sampling_is_seeded_and_only_for_the_listed_columns(project: Path):
    infer(project, GENERATIVE)
    argmax = _predictions(project)
    infer(project, GENERATIVE, sample_from_distribution_columns=["event"], seed=1)
    first = _predictions(project)
    infer(project, GENERATIVE, sample_from_distribution_columns=["event"], seed=1)
    np.testing.assert_array_equal(first["event"], _predictions(project)["event"])
    infer(project, GENERATIVE, sample_from_distribution_columns=["event"], seed=2)
    assert not np.array_equal(first["event"], _predictions(project)["event"])
    assert not np.array_equal(first["event"], argmax["event"])
    np.testing.assert_array_equal(first["amount"], argmax["amount"])
    with pytest.raises(UserError, match="sample_from_distribution_columns: 'amount' is not a categorical target"):
        infer(project, GENERATIVE, sample_from_distribution_columns=["amount"])


def test_several_models_and_a_glob_that_picks_the_newest(project: Path):
    models = project / "models"
    for name, age in (("old-last-1.onnx", 100), ("old-last-2.onnx", 0)):
        shutil.copy(models / GENERATIVE, models / name)
        os.utime(models / name, (os.path.getmtime(models / GENERATIVE) - age,) * 2)
    written = infer(project, "old-last-*.onnx", model_path=[f"models/{GENERATIVE}", "models/old-last-*.onnx"])
    assert {p.parent.name for p in written} == {"tiny-last-1", "old-last-2"}
    np.testing.assert_array_equal(_predictions(project)["event"], _predictions(project, "old-last-2.onnx")["event"])
    with pytest.raises(UserError, match="no model file matches"):
        infer(project, "missing-*.onnx")
    with pytest.raises(UserError) as refused:
        infer(
            project, GENERATIVE, model_path=["models/old-last-1.onnx", f"models/{GENERATIVE}", "models/tiny-last-1.pt"]
        )
    assert refused.value.problem == (
        f"models ['{GENERATIVE}', 'tiny-last-1.pt'] would write to the same output folder (same file stem)"
    )  # only the models that collide


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"context_length": 16}, "context_length: config says 16, but tiny-last-1.onnx was exported with 8"),
        (
            {"input_columns": ["event", "amount"]},
            "input_columns: config says ['event', 'amount'], but tiny-last-1.onnx "
            "was exported with ['event', 'channel', 'amount']",
        ),
        (
            {"real_columns": ["amount", "event"]},
            "real_columns: config says ['amount', 'event'], but tiny-last-1.onnx was exported with ['amount']",
        ),
        ({"target_offset": 2}, "target_offset: config says 2"),
        (
            {"model_type": "embedding"},
            "model_type: is 'embedding', but tiny-last-1.onnx was exported with model type 'generative'",
        ),
        ({"autoregressive": True, "generation_steps": 2}, "autoregressive: needs the input columns to be the targets"),
        (
            {"model_interface": "other"},
            "model_interface: config says 'other', but tiny-last-1.onnx was exported with 'default'",
        ),
        (
            {"column_data_types": {"event": "Float64", "channel": "Int64", "amount": "Float64"}},
            "column_data_types: config says {'event': 'Float64', 'channel': 'Int64', 'amount': 'Float64'}, "
            "but tiny-last-1.onnx was exported with {'event': 'Int64', 'channel': 'Int64', 'amount': 'Float64'}",
        ),
    ],
)
def test_explicit_values_that_disagree_with_the_contract_name_field_and_both_values(
    project: Path, fields: dict, message: str
):
    with pytest.raises(UserError) as caught:
        infer(project, GENERATIVE, **fields)
    assert message in str(caught.value)


def test_agreeing_explicit_values_and_extra_data_columns_pass(project: Path):
    infer(
        project,
        GENERATIVE,
        context_length=8,
        input_columns=["amount", "event", "channel"],
        categorical_columns=["event", "channel", "unused"],
        real_columns=["amount", "delay"],
        prediction_length=1,
        training_objective="causal",
        model_interface="default",
        target_column_types={"event": "categorical", "amount": "real"},
        column_data_types={"event": "Int64", "channel": "Int64", "amount": "Float64", "delay": "Float64"},
    )
    infer(project, GENERATIVE, categorical_columns=["event"], real_columns=[])  # kinds may leave columns out, as in 3.x


def test_metadata_with_other_categories_or_statistics_is_refused(project: Path):
    metadata = json.loads(METADATA.read_text())
    metadata["selected_columns_statistics"]["amount"]["std"] = 1.0
    (project / "other.json").write_text(json.dumps(metadata))
    with pytest.raises(UserError, match=r"selected_columns_statistics.amount: \S*/other.json says .*'std': 1.0"):
        infer(project, GENERATIVE, metadata_config_path="other.json")
    metadata = json.loads(METADATA.read_text())
    del metadata["id_maps"]["event"]["e11"]
    (project / "other.json").write_text(json.dumps(metadata))
    with pytest.raises(UserError, match=r"id_maps.event: \S*/other.json maps 11 values"):
        infer(project, GENERATIVE, metadata_config_path="other.json")


def test_training_config_route_finds_metadata_model_and_last_split(reference_project: Path):
    export_all(reference_project)
    (reference_project / "models" / GENERATIVE).rename(reference_project / "models" / "tiny-best-1.onnx")
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    write_yaml(reference_project / "configs" / "infer.yaml", {"training_config_path": "configs/train.yaml"})
    from sequifier.infer.runner import run_inference

    cwd = os.getcwd()
    os.chdir(reference_project)
    try:
        written = run_inference(Path("configs/infer.yaml"))
        assert written == [reference_project / "outputs" / "predictions" / "tiny-best-1" / "part-000.csv"]
        changed = tiny_train_config()
        changed["global_training"]["context_length"] = 12
        write_yaml(reference_project / "configs" / "train.yaml", changed)
        with pytest.raises(
            UserError,
            match="training_config_path: context_length: train.yaml says 12, but tiny-best-1.onnx was exported with 8",
        ):
            run_inference(Path("configs/infer.yaml"))
        write_yaml(
            reference_project / "configs" / "infer.yaml",
            {"training_config_path": "configs/train.yaml", "part": "other"},
        )
        with pytest.raises(UserError, match="part: 'other' is not in train.yaml"):
            run_inference(Path("configs/infer.yaml"))
        embedding = {"training_config_path": "configs/train.yaml", "model_type": "embedding"}
        write_yaml(reference_project / "configs" / "infer.yaml", embedding)
        with pytest.raises(
            UserError,
            match=r"no model file matches .*/models/tiny-embedding-best-\*.onnx; train.yaml does not export an ONNX "
            "embedding model: set export_embedding_model: true there and train",
        ):
            run_inference(Path("configs/infer.yaml"))
        write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config() | {"export_embedding_model": True})
        with pytest.raises(UserError, match=r"tiny-embedding-best-\*.onnx; train with train.yaml first"):
            run_inference(Path("configs/infer.yaml"))
        write_yaml(reference_project / "configs" / "infer.yaml", {"training_config_path": "configs/preprocess-pt.yaml"})
        with pytest.raises(
            UserError, match=r"training_config_path: .*/preprocess-pt.yaml cannot be read as a train config"
        ):
            run_inference(Path("configs/infer.yaml"))
        write_yaml(reference_project / "configs" / "infer.yaml", {"training_config_path": "configs"})
        with pytest.raises(UserError, match="training_config_path: .*/configs is a folder, not a file"):
            run_inference(Path("configs/infer.yaml"))
    finally:
        os.chdir(cwd)


def test_class_values_that_would_overwrite_a_probabilities_column_are_refused_unless_written_as_ids(project: Path):
    import onnx

    from sequifier.export.contract import CONTRACT_KEY

    model = onnx.load(str(project / "models" / GENERATIVE))
    prop = next(p for p in model.metadata_props if p.key == CONTRACT_KEY)
    contract = json.loads(prop.value)
    id_map = contract["columns"]["event"]["id_map"]
    id_map["itemPosition"] = id_map.pop("e03")
    prop.value = json.dumps(contract)
    onnx.save(model, str(project / "models" / "clash-last-1.onnx"))
    with pytest.raises(UserError, match="output_probabilities: target 'event' .* class value 'itemPosition'"):
        infer(project, "clash-last-1.onnx", output_probabilities=True)
    infer(project, "clash-last-1.onnx", output_probabilities=True, decode_categories=False)
    shares = outputs(project, "probabilities", "clash-last-1.onnx", "event")
    predicted = outputs(project, "predictions", "clash-last-1.onnx")
    assert shares.column("itemPosition").equals(predicted.column("itemPosition"))
    assert str(id_map["itemPosition"]) in shares.column_names
    unused = id_map.pop("e04")
    id_map[f"[unused {unused}]"] = id_map.pop("itemPosition")
    prop.value = json.dumps(contract)
    onnx.save(model, str(project / "models" / "clash-last-1.onnx"))
    with pytest.raises(UserError, match=rf"names two classes '\[unused {unused}\]'"):
        infer(project, "clash-last-1.onnx", output_probabilities=True)
    with pytest.raises(UserError, match="decoded predictions could not tell them apart") as refused:
        infer(project, "clash-last-1.onnx")
    assert refused.value.where == "decode_categories"
    infer(project, "clash-last-1.onnx", decode_categories=False)


def test_a_missing_folder_on_the_way_to_a_model_or_split_is_named(project: Path, tmp_path: Path):
    with pytest.raises(UserError) as refused:
        infer(project, "../modles/tiny-best-*.onnx")
    assert refused.value.where == "model_path"
    missing = project / "models" / ".." / "modles"
    assert f"; there is no folder {missing}; give a pattern under a folder that exists" in refused.value.problem
    with pytest.raises(UserError) as refused:
        infer(project, f"{GENERATIVE}/x*")
    assert refused.value.problem.endswith(
        f"; {project / 'models' / GENERATIVE} is a file, not a folder; give a pattern under a folder that exists"
    )
    with pytest.raises(UserError) as refused:
        infer(project, GENERATIVE, data_path=project / "dta" / "split.parquet")
    assert refused.value.where == "data_path"
    assert f"does not exist; there is no folder {project / 'dta'}" in refused.value.problem


def test_a_missing_last_split_of_the_metadata_is_blamed_on_the_metadata(project: Path, tmp_path: Path):
    metadata = json.loads(METADATA.read_text())
    metadata["split_paths"][-1] = "gone/events-split2.parquet"
    moved = tmp_path / "metadata.json"
    moved.write_text(json.dumps(metadata))
    config = {"project_root": str(project), "model_path": f"models/{GENERATIVE}", "metadata_config_path": str(moved)}
    with pytest.raises(UserError) as refused:
        run_inference(write_yaml(project / "configs" / "derived.yaml", config))
    assert refused.value.where == f"the last of split_paths in {moved}"
    assert refused.value.problem.startswith(f"{project / 'gone' / 'events-split2.parquet'} does not exist")


def test_a_metadata_without_splits_is_named_and_data_path_suggested(project: Path, tmp_path: Path):
    metadata = json.loads(METADATA.read_text())
    metadata["split_paths"] = []
    emptied = tmp_path / "metadata.json"
    emptied.write_text(json.dumps(metadata))
    config = {"project_root": str(project), "model_path": f"models/{GENERATIVE}", "metadata_config_path": str(emptied)}
    with pytest.raises(UserError) as refused:
        run_inference(write_yaml(project / "configs" / "derived.yaml", config))
    assert refused.value.where == str(emptied)
    assert refused.value.problem == "split_paths is empty, so it names no split to infer on; set data_path to the data"
