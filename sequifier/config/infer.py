"""The infer configuration: fields, defaults, and loading from YAML with CLI overrides.

Only `model_path` and `data_path` are needed: the artifact carries its execution contract.
The contract fields below (`input_columns` ... `prediction_length`) are optional checks: an
explicit value that disagrees with the artifact is an error naming both values.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from pathlib import Path
from typing import Optional, Union

from sequifier.config.errors import UserError
from sequifier.config.files import read_yaml_mapping
from sequifier.config.schema import frozen
from sequifier.config.typed import ProblemList, build, option

CONTRACT_FIELDS = ("input_columns", "target_columns", "categorical_columns", "real_columns", "context_length", "target_offset", "prediction_length")


@frozen
class InferConfig:
    project_root: str = option(".", "folder all relative paths resolve against")
    model_path: Optional[Union[str, tuple[str, ...]]] = option(None, "exported model file(s), .onnx or .pt; a glob picks the newest match "
                                                                   "(default with training_config_path: models/<model>-best-*.onnx)")
    model_type: str = option("generative", "generative: predict the targets; embedding: final backbone activations", choices=("generative", "embedding"))
    data_path: Optional[str] = option(None, "preprocessed split to infer on (default: the metadata's last split)")
    metadata_config_path: Optional[str] = option(None, "metadata JSON whose last split is the default data_path")
    training_config_path: Optional[str] = option(None, "train YAML whose dataset part gives the metadata and the model name")
    dataset: Optional[str] = option(None, "dataset of training_config_path (default: its only dataset)")
    part: Optional[str] = option(None, "part of that dataset (default: its first part)")
    read_format: Optional[str] = option(None, "stored form of data_path (default: from the path)", choices=("parquet", "csv", "pt"))
    write_format: str = option("csv", "output file format", choices=("csv", "parquet"))
    inference_batch_size: int = option(16, "windows per model call (small batches stay in cache)")
    output_probabilities: bool = option(False, "also write class probabilities of categorical targets")
    decode_categories: bool = option(True, "write categories as their raw values (false: as ids)")
    sample_from_distribution_columns: Optional[tuple[str, ...]] = option(None, "categorical targets sampled from the softmax instead of argmax")
    infer_with_dropout: bool = option(False, "keep dropout active (PT models, or ONNX exported with export_with_dropout)")
    seed: int = option(1010, "seed of sampling and inference-time dropout")
    autoregressive: bool = option(False, "feed each prediction back as the next input for generation_steps steps")
    generation_steps: Optional[int] = option(None, "number of items generated per window (autoregressive)")
    input_columns: Optional[tuple[str, ...]] = option(None, "check: the model's input columns")
    target_columns: Optional[tuple[str, ...]] = option(None, "check: the model's target columns")
    categorical_columns: Optional[tuple[str, ...]] = option(None, "check: which of the model's columns are categorical")
    real_columns: Optional[tuple[str, ...]] = option(None, "check: which of the model's columns are real")
    context_length: Optional[int] = option(None, "check: the model's context length")
    target_offset: Optional[int] = option(None, "check: the model's target offset")
    prediction_length: Optional[int] = option(None, "check: the model's prediction length")

    @property
    def model_paths(self) -> tuple[str, ...]:
        if self.model_path is None:
            return ()
        return (self.model_path,) if isinstance(self.model_path, str) else self.model_path


def _check(config: InferConfig) -> None:
    problems = ProblemList()
    if config.inference_batch_size < 1:
        problems.add("inference_batch_size", f"must be at least 1, got {config.inference_batch_size}")
    if config.autoregressive and config.generation_steps is None:
        problems.add("generation_steps", "is required with autoregressive: true")
    if config.generation_steps is not None and not config.autoregressive:
        problems.add("generation_steps", "only applies with autoregressive: true")
    if config.generation_steps is not None and config.generation_steps < 1:
        problems.add("generation_steps", f"must be at least 1, got {config.generation_steps}")
    if config.model_type == "embedding":
        for key in ("autoregressive", "output_probabilities", "sample_from_distribution_columns"):
            if getattr(config, key):
                problems.add(key, "applies to generative models; model_type is 'embedding'")
    if config.training_config_path is None:
        for key in ("dataset", "part"):
            if getattr(config, key) is not None:
                problems.add(key, "selects a part of training_config_path, which is not set")
        if not config.model_paths:
            problems.add("model_path", "is required (or set training_config_path to use its model name)")
        if config.data_path is None and config.metadata_config_path is None:
            problems.add("data_path", "set data_path, or metadata_config_path / training_config_path to infer on the metadata's last split")
    problems.raise_if_any()


def load_infer_config(config_path: Path, data_path: str | None = None, model_path: str | None = None,
                      seed: int | None = None, randomize: bool = False) -> InferConfig:
    """The infer config of `config_path` with command-line overrides; `randomize` draws a fresh seed."""
    problems = ProblemList()
    config = build(InferConfig, read_yaml_mapping(config_path), "", problems)
    problems.raise_if_any()
    if data_path:
        config = replace(config, data_path=data_path)
    if model_path:
        config = replace(config, model_path=model_path)
    if seed is not None and randomize:
        raise UserError("--randomize", "draws a seed; it cannot be combined with --seed")
    if seed is not None:
        config = replace(config, seed=seed)
    if randomize:
        config = replace(config, seed=secrets.randbelow(2**31))
    _check(config)
    return config
