"""The infer configuration: fields, defaults, and loading from YAML with CLI overrides."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from sequifier.config.errors import UserError
from sequifier.config.files import read_yaml_mapping
from sequifier.config.typed import ProblemList, build, option


@dataclass(frozen=True, kw_only=True)
class InferConfig:
    project_root: str = option(".", "folder all relative paths resolve against")
    model_path: str = option(doc="exported model file (a glob picks the newest match)")
    data_path: Optional[str] = option(None, "preprocessed split to infer on (default: the metadata's last split)")
    metadata_config_path: Optional[str] = option(None, "metadata JSON whose last split is the default data_path")
    model_type: str = option("generative", "what the model returns", choices=("generative",))
    inference_batch_size: int = option(256, "windows per inference batch")
    write_format: str = option("csv", "output file format", choices=("csv", "parquet"))


def load_infer_config(config_path: Path, data_path: str | None = None, model_path: str | None = None) -> InferConfig:
    problems = ProblemList()
    config = build(InferConfig, read_yaml_mapping(config_path), "", problems)
    problems.raise_if_any()
    if data_path:
        config = replace(config, data_path=data_path)
    if model_path:
        config = replace(config, model_path=model_path)
    if config.inference_batch_size < 1:
        raise UserError("inference_batch_size", f"must be at least 1, got {config.inference_batch_size}")
    if config.data_path is None and config.metadata_config_path is None:
        raise UserError("data_path", "set data_path, or metadata_config_path to infer on its last split")
    return config
