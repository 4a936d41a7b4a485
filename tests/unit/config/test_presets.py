"""The presets shipped in conf/: each composes with the tiny config, validates, and sets what its file says."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config, compose_config, config_groups
from sequifier.config.errors import UserError
from sequifier.training.capabilities import check_supported

CONF = Path(str(resources.files("sequifier.conf")))
DOCS = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
SENTINEL = "set-by-the-user-file"
INTERPOLATION = re.compile(r"^\$\{([\w.]+)\}$")


def _presets(prefix: str | None = None) -> list[tuple[str, str]]:
    """(group, option) of every preset file under `prefix`, or of the plain groups when None."""
    found = []
    for path in sorted(CONF.rglob("*.yaml")):
        group = path.parent.relative_to(CONF).as_posix()
        placed = group.startswith(("hydra/", "dataset_training/"))
        if (prefix is None and not placed) or (prefix is not None and group.startswith(prefix)):
            found.append((group, path.stem))
    return found


PRESETS = _presets()
LAUNCHERS = _presets("hydra/")
DATASET_PRESETS = _presets("dataset_training/")


def _file(group: str, option: str) -> Path:
    return CONF / group / f"{option}.yaml"


def _header(text: str) -> list[str]:
    """The comment lines a preset file starts with."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def _package(group: str, text: str) -> list[str]:
    """Where Hydra puts the file's content: its `# @package` header, else the group path."""
    for line in _header(text):
        match = re.match(r"^#\s*@package\s+(\S+)\s*$", line)
        if match:
            return match.group(1).split(".")
    return group.split("/")


def _leaves(data: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(data, dict) and data:
        out: dict[tuple[str, ...], Any] = {}
        for key, value in data.items():
            out.update(_leaves(value, prefix + (str(key),)))
        return out
    return {prefix: data}


def _get(data: Any, path: tuple[str, ...] | list[str]) -> Any:
    for key in path:
        data = data[key]
    return data


def _set(data: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
    data[path[-1]] = value


def _expected(value: Any, composed: dict) -> Any:
    """A preset's value as the composed config holds it (interpolations resolved)."""
    match = INTERPOLATION.match(value) if isinstance(value, str) else None
    return _get(composed, match.group(1).split(".")) if match else value


@pytest.fixture
def tiny_file(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "configs" / "train.yaml", tiny_train_config())


def test_every_preset_folder_is_a_group_hydra_finds():
    assert {group for group, _ in PRESETS + LAUNCHERS + DATASET_PRESETS} == set(config_groups())
    assert {
        "model/backbone",
        "global_training/optimizer",
        "global_training/scheduler",
        "global_training/precision",
        "training_plan",
        "dataset_training/freeze",
    } <= set(config_groups())


@pytest.mark.parametrize(("group", "option"), PRESETS + LAUNCHERS, ids=[f"{g}={o}" for g, o in PRESETS + LAUNCHERS])
def test_a_preset_file_starts_with_the_command_that_selects_it(group: str, option: str):
    header = _header(_file(group, option).read_text())
    assert header, "a preset file starts with comments"
    selects = [line for line in header if "Select with: sequifier train" in line]
    assert len(selects) == 1
    assert f" {group}={option}" in selects[0]


@pytest.mark.parametrize(("group", "option"), PRESETS, ids=[f"{g}={o}" for g, o in PRESETS])
def test_a_preset_composes_with_the_tiny_config_and_validates(tiny_file: Path, group: str, option: str):
    config = canonical_config(compose_config(tiny_file, [f"{group}={option}"]))
    assert config.model_name == "tiny"


@pytest.mark.parametrize(("group", "option"), PRESETS, ids=[f"{g}={o}" for g, o in PRESETS])
def test_a_preset_replaces_every_value_it_lists(tmp_path: Path, group: str, option: str):
    """The user's file holds a different value at every leaf the preset lists; selecting the preset sets them all."""
    text = _file(group, option).read_text()
    content = yaml.safe_load(text)
    assert isinstance(content, dict) and content and "defaults" not in content
    package = tuple(_package(group, text))
    leaves = {package + path: value for path, value in _leaves(content).items()}
    user = tiny_train_config()
    for path in leaves:
        _set(user, path, SENTINEL)
    config_file = write_yaml(tmp_path / "configs" / "train.yaml", user)

    without = compose_config(config_file, [])
    assert all(_get(without, path) == SENTINEL for path in leaves)
    composed = compose_config(config_file, [f"{group}={option}"])
    for path, value in leaves.items():
        assert _get(composed, path) == _expected(value, composed), ".".join(path)


def test_the_backbone_presets_grow_from_tiny_to_base(tiny_file: Path):
    sizes = {}
    for option in ("tiny", "small", "base"):
        architecture = canonical_config(
            compose_config(tiny_file, [f"model/backbone={option}"])
        ).model.backbone.architecture
        sizes[option] = (architecture.dim_model, architecture.num_layers)
    assert sizes == {"tiny": (32, 1), "small": (64, 2), "base": (128, 6)}


def test_a_backbone_preset_replaces_the_attention_layout_of_the_file(tmp_path: Path):
    config = tiny_train_config()
    config["model"]["backbone"]["architecture"]["attention"] = {"type": "gqa", "n_heads": 2, "n_kv_heads": 1}
    config_file = write_yaml(tmp_path / "configs" / "train.yaml", config)
    attention = canonical_config(
        compose_config(config_file, ["model/backbone=small"])
    ).model.backbone.architecture.attention
    assert (attention.type, attention.n_heads, attention.n_kv_heads) == ("mha", 4, None)


def test_onecycle_peaks_at_the_learning_rate_and_leaves_the_duration_to_sequifier(tiny_file: Path):
    training = canonical_config(
        compose_config(tiny_file, ["global_training/scheduler=onecycle", "global_training.learning_rate=0.02"])
    ).global_training
    assert training.scheduler["name"] == "OneCycleLR"
    assert training.scheduler["max_lr"] == 0.02
    for option in ("step", "onecycle", "cosine"):
        scheduler = yaml.safe_load(_file("global_training/scheduler", option).read_text())
        assert not {"total_steps", "T_max", "total_iters"} & set(scheduler)


def test_the_optimizer_presets_name_their_torch_class(tiny_file: Path):
    names = {
        option: canonical_config(
            compose_config(tiny_file, [f"global_training/optimizer={option}"])
        ).global_training.optimizer["name"]
        for option in ("adamw", "adam", "sgd")
    }
    assert names == {"adamw": "AdamW", "adam": "Adam", "sgd": "SGD"}


def test_an_optimizer_preset_keeps_other_arguments_of_the_file_which_tilde_removes(tmp_path: Path):
    config = tiny_train_config()
    config["global_training"]["optimizer"] = {"name": "AdamW", "betas": [0.9, 0.95], "weight_decay": 0.1}
    config_file = write_yaml(tmp_path / "configs" / "train.yaml", config)
    with pytest.raises(UserError, match=r"global_training\.optimizer\.betas: SGD does not take this argument"):
        check_supported(canonical_config(compose_config(config_file, ["global_training/optimizer=sgd"])))
    optimizer = canonical_config(
        compose_config(config_file, ["global_training/optimizer=sgd", "~global_training.optimizer.betas"])
    ).global_training.optimizer
    assert optimizer == {"name": "SGD", "momentum": 0.9, "dampening": 0.0, "nesterov": True, "weight_decay": 0.0}


def test_the_precision_preset_sets_global_training_keys_and_an_override_wins(tiny_file: Path):
    fp32 = canonical_config(
        compose_config(tiny_file, ["global_training/precision=fp32", "global_training.layer_autocast=true"])
    )
    assert fp32.global_training.layer_autocast is True
    assert fp32.global_training.batch_size == 16  # the file's other global_training values stay


def test_only_presets_the_engine_runs_are_shipped():
    root = resources.files("sequifier.conf")
    shipped = {
        group: sorted(Path(p.name).stem for p in root.joinpath(group).iterdir() if p.name.endswith(".yaml"))
        for group in config_groups()
    }
    assert shipped["global_training/distributed"] == ["ddp_gloo_cpu", "ddp_nccl", "fsdp"]
    assert shipped["global_training/precision"] == ["bf16", "fp32"]
    assert shipped["hydra/launcher"] == ["slurm_ddp", "submitit_local", "submitit_slurm"]


def test_the_smoke_plan_trains_one_epoch_and_needs_a_singleton_plan(tmp_path: Path):
    config_file = write_yaml(tmp_path / "configs" / "train.yaml", tiny_train_config(training_plan={"epochs": 7}))
    phases = canonical_config(compose_config(config_file, ["training_plan=smoke"])).training_plan.phases
    assert [(phase.name, phase.epochs) for phase in phases] == [("train", 1)]
    named = tiny_train_config(
        training_plan={"phases": [{"name": "a", "epochs": 3, "sources": [{"source": "default"}]}]}
    )
    named_file = write_yaml(tmp_path / "named" / "train.yaml", named)
    with pytest.raises(UserError, match="training_plan.epochs"):
        canonical_config(compose_config(named_file, ["training_plan=smoke"]))


def test_the_configuration_guide_lists_every_preset():
    text = DOCS.read_text()
    groups_section = text[text.index("## Config groups") : text.index("## Sweeps")]
    for group, option in PRESETS + LAUNCHERS:
        assert f"`{group}`" in groups_section, group
        assert f"`{option}`" in groups_section, f"{group}={option}"


@pytest.mark.parametrize(("group", "option"), DATASET_PRESETS, ids=[f"{g}={o}" for g, o in DATASET_PRESETS])
def test_a_dataset_preset_is_placed_on_the_dataset_it_names(tiny_file: Path, group: str, option: str):
    header = _header(_file(group, option).read_text())
    assert f"Select with: sequifier train +{group}@dataset.freeze={option}" in header[0]
    freeze = (
        canonical_config(compose_config(tiny_file, [f"+{group}@dataset.freeze={option}"]))
        .dataset_training["default"]
        .freeze
    )
    content = yaml.safe_load(_file(group, option).read_text())
    for scope, selectors in content.items():
        node = getattr(freeze, scope)
        for key, value in selectors.items():
            assert list(getattr(node, key)) == value
    with pytest.raises(UserError, match="needs the dataset it applies to"):
        compose_config(tiny_file, [f"{group}={option}"])
