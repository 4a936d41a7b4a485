"""Helpers shared by the data-layer tests: the reference-v3 fixture and throwaway project folders."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from conftest import REFERENCE_DIR


def make_project(root: Path, data_file: Path, config: dict) -> Path:
    """A project folder with `data/<data_file.name>` and `configs/preprocess.yaml`; returns the config path."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "configs").mkdir(parents=True, exist_ok=True)
    if data_file.is_dir():
        shutil.copytree(data_file, root / "data" / data_file.name)
    elif data_file.exists():
        shutil.copy(data_file, root / "data" / data_file.name)
    config_path = root / "configs" / "preprocess.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return config_path


def reference_config(**changes) -> dict:
    config = yaml.safe_load((REFERENCE_DIR / "configs" / "preprocess-parquet.yaml").read_text())
    config.update(changes)
    return config
