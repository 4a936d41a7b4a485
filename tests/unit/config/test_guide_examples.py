"""Every YAML example of the train and distributed-training guides is a valid train config.

The examples are verbatim copies in tests/fixtures/guide/. Complete examples validate as
they are; fragments are merged into a complete example first (see `merged`).

The examples set `device: cuda`. Validation rejects a CUDA device on a machine without CUDA
(tests/unit/config/test_invalid_configs.py::device-cuda-without-cuda), so `runnable_here`
replaces it with `cpu` where CUDA is missing; everything else is validated as written.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from conftest import REFERENCE_DIR

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.config.schema import TrainConfig

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"
REFERENCE_METADATA = REFERENCE_DIR / "configs" / "metadata_configs" / "events.json"
# The guide's examples read windows of context_length 128 + target_offset 1 = 129 steps.
GUIDE_WINDOW = 129
# The evaluation fragment evaluates `telemetry.main`, a dataset the canonical example does not declare.
TELEMETRY = {
    "dataset_training": {
        "telemetry": {
            "parts": {"main": {"metadata_config_path": "configs/metadata/telemetry.json"}},
            "criterion": {"event": "CrossEntropyLoss"},
        }
    }
}


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((GUIDE / name).read_text())


def runnable_here(data: dict[str, Any]) -> dict[str, Any]:
    """The example with `device: cuda` replaced by cpu when this machine has no CUDA (see the module doc)."""
    data = copy.deepcopy(data)
    if str(data.get("device", "")).startswith("cuda") and not torch.cuda.is_available():
        data["device"] = "cpu"
    return data


def merged(base: dict[str, Any], *fragments: dict[str, Any]) -> dict[str, Any]:
    """`base` with each fragment's top-level sections laid over it.

    A fragment section that is a mapping replaces the base section's fields of the same name
    (a fragment's `model.interface` replaces the base's interface whole; a fragment's
    `global_training.scheduler` replaces the base's scheduler and keeps its other fields);
    any other section value replaces the base's value.
    """
    out = copy.deepcopy(base)
    for fragment in fragments:
        for key, value in fragment.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key].update(copy.deepcopy(value))
            else:
                out[key] = copy.deepcopy(value)
    return out


def singleton() -> dict[str, Any]:
    return runnable_here(load("train-singleton.yaml"))


def canonical() -> dict[str, Any]:
    return runnable_here(load("train-canonical.yaml"))


def guide_project(tmp_path: Path, window_length: int | None = GUIDE_WINDOW) -> Path:
    """A project whose configs/metadata/{events,events-increment,telemetry}.json are the reference
    metadata with split_paths pointing at copies of the reference splits in the project.

    `window_length` replaces the stored window length (the reference stores 17 steps, shorter
    than the guide's context); None keeps the reference's.
    """
    project = tmp_path / "project"
    (project / "configs" / "metadata").mkdir(parents=True)
    (project / "data").mkdir()
    reference = json.loads(REFERENCE_METADATA.read_text())
    for name in ("events", "events-increment", "telemetry"):
        split_paths = []
        for i, split in enumerate(reference["split_paths"]):
            copied = f"./data/{name}-split{i}.parquet"
            shutil.copy(REFERENCE_DIR / split, project / copied)
            split_paths.append(copied)
        metadata = reference | {"split_paths": split_paths}
        if window_length is not None:
            metadata |= {"window_length": window_length, "window_lengths": [window_length] * len(split_paths)}
        (project / "configs" / "metadata" / f"{name}.json").write_text(json.dumps(metadata))
    return project


def test_the_fixtures_are_the_guides_examples():
    names = sorted(p.name for p in GUIDE.glob("*.yaml"))
    assert names == [
        "distributed-global-training.yaml",
        "train-canonical.yaml",
        "train-dataset-freezing.yaml",
        "train-depth-model.yaml",
        "train-evaluation-monitor.yaml",
        "train-onecycle-scheduler.yaml",
        "train-singleton-canonical-twin.yaml",
        "train-singleton.yaml",
    ]


def test_singleton_example_validates_and_expands_as_the_guide_says():
    config = canonical_config(singleton())
    assert list(config.model.interfaces) == ["default"]
    dataset = config.dataset_training["default"]
    assert dataset.model_interface == "default"
    assert dataset.parts["default"].metadata_config_path == "configs/metadata/events.json"
    (phase,) = config.training_plan.phases
    assert (phase.name, phase.epochs, phase.mode, [s.source for s in phase.sources]) == (
        "train",
        5,
        "sequential",
        ["default"],
    )
    assert [s.source for s in config.evaluation.sources] == ["default"]


def test_singleton_example_and_its_canonical_twin_are_one_config():
    twin = canonical_config(runnable_here(load("train-singleton-canonical-twin.yaml")))
    assert isinstance(twin, TrainConfig)
    assert canonical_config(singleton()) == twin


def test_canonical_example_validates():
    config = canonical_config(canonical())
    dataset = config.dataset_training["events"]
    assert list(dataset.parts) == ["original", "increment"]
    assert dataset.freeze.backbone.freeze == ("attention.qkv",)
    assert config.model.interfaces["event_prediction"].categorical_decoder_special_tokens == {"event": ("other",)}
    assert [(p.name, p.epochs, p.mode) for p in config.training_plan.phases] == [
        ("incremental_finetuning", 2, "sequential"),
        ("complete_retraining", 5, "interleaved"),
    ]
    assert config.global_training.scheduler == {"name": "StepLR", "step_size": 1, "gamma": 0.99}


@pytest.mark.parametrize("example", [singleton, canonical], ids=["singleton", "canonical"])
def test_complete_examples_resolve_against_their_metadata(example, tmp_path: Path):
    project = guide_project(tmp_path)
    spec = resolve(canonical_config(example()), tmp_path / "run", cwd=project)
    assert all(part.validation_path is not None and part.validation_path.is_file() for part in spec.parts)
    assert {name: column.kind for name, column in spec.interface_columns.items()} == {"event": "categorical"}


def test_canonical_example_resolves_both_parts_of_events(tmp_path: Path):
    spec = resolve(canonical_config(canonical()), tmp_path / "run", cwd=guide_project(tmp_path))
    assert [(p.dataset, p.part, p.metadata_path.name) for p in spec.parts] == [
        ("events", "original", "events.json"),
        ("events", "increment", "events-increment.json"),
    ]


def test_guide_context_is_longer_than_the_reference_windows(tmp_path: Path):
    """Why guide_project lengthens the stored windows: the reference data stores 17 steps."""
    project = guide_project(tmp_path, window_length=None)
    with pytest.raises(UserError) as error:
        resolve(canonical_config(canonical()), tmp_path / "run", cwd=project)
    assert error.value.where == "global_training.context_length"
    assert "exceeds the stored window length 17" in str(error.value)


def test_onecycle_scheduler_fragment_validates():
    config = canonical_config(merged(canonical(), load("train-onecycle-scheduler.yaml")))
    training = config.global_training
    assert training.scheduler == {"name": "OneCycleLR", "max_lr": 0.003, "pct_start": 0.2, "cycle_momentum": False}
    assert (training.scheduler_step_on, training.reset_optimization_on_phase) == ("epoch", False)
    assert training.optimizer == {"name": "AdamW", "weight_decay": 0.01}  # kept from the canonical example


def test_onecycle_total_steps_may_equal_the_sum_of_phase_epochs_in_continuous_mode():
    fragment = load("train-onecycle-scheduler.yaml")
    fragment["global_training"]["scheduler"]["total_steps"] = 2 + 5  # the canonical example's phases
    assert canonical_config(merged(canonical(), fragment)).global_training.scheduler["total_steps"] == 7


def test_evaluation_with_monitor_fragment_validates(tmp_path: Path):
    config = canonical_config(merged(canonical(), TELEMETRY, load("train-evaluation-monitor.yaml")))
    assert [s.source for s in config.evaluation.sources] == ["events", "telemetry.main"]
    assert (config.evaluation.monitor.source, config.evaluation.monitor.metric, config.evaluation.monitor.mode) == (
        "events",
        "loss",
        "min",
    )
    assert config.dataset_training["telemetry"].model_interface == "event_prediction"
    spec = resolve(config, tmp_path / "run", cwd=guide_project(tmp_path))
    assert {(p.dataset, p.part) for p in spec.parts if p.validation_path} == {
        ("events", "original"),
        ("events", "increment"),
        ("telemetry", "main"),
    }


def depth_example() -> dict[str, Any]:
    """The singleton example with the depth-encoder model, the dataset freezing fragment (whose
    criterion and branches belong to that model) and the read format the guide asks for."""
    return merged(
        singleton(),
        load("train-depth-model.yaml"),
        load("train-dataset-freezing.yaml"),
        {"global_training": {"read_format": "pt"}},
    )


def test_depth_encoder_fragment_validates():
    config = canonical_config(depth_example())
    interface = config.model.interfaces["default"]
    assert interface.input_columns == ("accountType", "subitemType", "subitemAmount")
    root = interface.ingestion
    assert (root.type, root.output_dim, root.merge.type) == ("composite", None, "concat")
    item, subitems = root.branches["item"], root.branches["subitems"]
    assert (item.type, item.columns, item.output_dim) == ("embedding", ("accountType",), 32)
    assert (subitems.type, subitems.layout, subitems.output_dim, subitems.dropout) == (
        "depth_transformer",
        "subitems",
        96,
        0.1,
    )
    assert subitems.initialization_seed == 12345
    assert subitems.initialization["attention.qkv"].weight.method == "xavier_uniform"
    depth = subitems.architecture
    assert (depth.dim_model, depth.attention.type, depth.attention.n_heads, depth.attention.n_kv_heads) == (
        64,
        "gqa",
        4,
        2,
    )
    assert config.model.backbone.initialization_seed == 20260910


def test_dataset_freezing_fragment_validates_against_the_depth_model():
    freeze = canonical_config(depth_example()).dataset_training["default"].freeze
    assert freeze.backbone.freeze == ("attention.qkv",)
    branches = freeze.ingestion.branches
    assert branches["subitems"].freezing_except == ("free_parameter", "ingestion.output_projection")
    assert branches["item"].freeze == ()


def test_distributed_global_training_fragment_validates():
    config = canonical_config(merged(canonical(), load("distributed-global-training.yaml")))
    training = config.global_training
    assert (training.read_format, training.distributed, training.data_parallelism, training.fsdp_cpu_offload) == (
        "pt",
        True,
        "fsdp",
        False,
    )
    assert (training.layer_type_dtypes, training.torch_compile, training.world_size, training.backend) == (
        None,
        "inner",
        32,
        "nccl",
    )


def test_distributed_fragment_with_ddp_takes_outer_compilation():
    """The fragment's comments: use inner or none for FSDP; use outer or none for DDP."""
    fragment = load("distributed-global-training.yaml")
    fragment["global_training"] |= {"data_parallelism": "ddp", "torch_compile": "outer"}
    del fragment["global_training"]["fsdp_cpu_offload"]
    assert canonical_config(merged(canonical(), fragment)).global_training.torch_compile == "outer"
