"""The infer configuration: fields, defaults, and loading from YAML (with fragments) and CLI overrides.

Only `model_path` and `data_path` are needed: the artifact carries its execution contract.
An infer.yaml written for sequifier 3.x is accepted unchanged: its contract fields
(`input_columns` ... `column_data_types`) are checks, and an explicit value that disagrees with
the artifact is an error naming both values; `device`, `window_stride` and
`preprocessing_data_path` are honoured; fields without a meaning here are reported by `notices`.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from pathlib import Path
from typing import Optional, Union

from sequifier.config.errors import UserError
from sequifier.config.fragments import resolved_file
from sequifier.config.schema import frozen
from sequifier.config.typed import ProblemList, build, option
from sequifier.config.validate import check_device

CONTRACT_FIELDS = (
    "input_columns",
    "target_columns",
    "categorical_columns",
    "real_columns",
    "context_length",
    "target_offset",
    "prediction_length",
    "training_objective",
    "model_interface",
    "target_column_types",
    "column_data_types",
)


@frozen
class InferConfig:
    project_root: str = option(".", "folder all relative paths resolve against")
    model_path: Optional[Union[str, tuple[str, ...]]] = option(
        None,
        "exported model file(s), .onnx or .pt; a glob picks the newest match "
        "(default with training_config_path: models/<model>-best-*.onnx)",
    )
    model_type: str = option(
        "generative",
        "generative: predict the targets; embedding: final backbone activations",
        choices=("generative", "embedding"),
    )
    device: str = option(
        "cpu", "where the model runs: cpu, cuda or cuda:N (PT, or ONNX with onnxruntime-gpu), mps (PT)"
    )
    data_path: Optional[str] = option(None, "preprocessed split to infer on (default: the metadata's last split)")
    metadata_config_path: Optional[str] = option(None, "metadata JSON whose last split is the default data_path")
    preprocessing_data_path: Optional[str] = option(
        None,
        "raw data `sequifier preprocess` read; without "
        "metadata_config_path, the metadata is "
        "configs/metadata_configs/<its name>.json",
    )
    training_config_path: Optional[str] = option(
        None, "train YAML whose dataset part gives the metadata and the model name"
    )
    dataset: Optional[str] = option(None, "dataset of training_config_path (default: its only dataset)")
    part: Optional[str] = option(None, "part of that dataset (default: its first part)")
    read_format: Optional[str] = option(
        None, "stored form of data_path (default: from the path)", choices=("parquet", "csv", "pt")
    )
    write_format: str = option("csv", "output file format", choices=("csv", "parquet"))
    inference_batch_size: int = option(16, "model views per model call (small batches stay in cache)")
    output_probabilities: bool = option(False, "also write class probabilities of categorical targets")
    decode_categories: bool = option(True, "write categories as their raw values (false: as ids)")
    sample_from_distribution_columns: Optional[tuple[str, ...]] = option(
        None, "categorical targets sampled from the softmax instead of argmax"
    )
    infer_with_dropout: bool = option(
        False, "keep dropout active (PT models, or ONNX exported with export_with_dropout)"
    )
    seed: int = option(1010, "seed of sampling and inference-time dropout")
    deterministic: bool = option(False, "accepted for 3.x configs; inference here is deterministic for a given seed")
    window_stride: Optional[int] = option(
        None,
        "also predict from the views ending 1, 2, ... strides before "
        "a stored window's end (null: one right-aligned view per window)",
    )
    prediction_alignment_steps: int = option(1, "prediction groups per stored window; only 1 (no aligned splits here)")
    autoregressive: bool = option(
        False, "generate generation_steps items after each window, each prediction fed back as the next input"
    )
    generation_steps: Optional[int] = option(None, "number of items generated per window (autoregressive)")
    input_columns: Optional[tuple[str, ...]] = option(None, "check: the model's input columns")
    target_columns: Optional[tuple[str, ...]] = option(None, "check: the model's target columns")
    categorical_columns: Optional[tuple[str, ...]] = option(
        None, "check: these columns, where the model uses them, are categorical"
    )
    real_columns: Optional[tuple[str, ...]] = option(None, "check: these columns, where the model uses them, are real")
    context_length: Optional[int] = option(None, "check: the model's context length")
    target_offset: Optional[int] = option(None, "check: the model's target offset")
    prediction_length: Optional[int] = option(None, "check: the model's prediction length")
    training_objective: Optional[str] = option(None, "check: the model's training objective")
    model_interface: Optional[str] = option(
        None, "the interface a run-wide PT bundle serves (needed when it has several); for ONNX, a check"
    )
    target_column_types: Optional[dict[str, str]] = option(None, "check: categorical or real, per target column")
    column_data_types: Optional[dict[str, str]] = option(
        None, "check: the stored data type (Int64, Float64, ...) of each of the model's columns"
    )

    @property
    def model_paths(self) -> tuple[str, ...]:
        if self.model_path is None:
            return ()
        return (self.model_path,) if isinstance(self.model_path, str) else self.model_path


def metadata_path_of_preprocessing(project_root: Path, preprocessing_data_path: str) -> Path:
    """The metadata file `sequifier preprocess` writes for that input: named by its file stem, or a folder's name."""
    data = project_root / preprocessing_data_path
    name = data.name if data.is_dir() or not data.suffix else data.stem
    return project_root / "configs" / "metadata_configs" / f"{name}.json"


def notices(config: InferConfig) -> list[str]:
    """One line per accepted field that has no effect here."""
    lines = []
    if config.deterministic:
        lines.append(
            "deterministic: ignored; inference here gives the same results for the same seed (with "
            "infer_with_dropout, for the same seed and inference_batch_size)"
        )
    if config.training_config_path is None:
        lines += [
            f"{key}: ignored; it selects a part of training_config_path, which is not set"
            for key in ("dataset", "part")
            if getattr(config, key) is not None
        ]
    return lines


PATH_FIELDS = ("project_root", "data_path", "metadata_config_path", "preprocessing_data_path", "training_config_path")


def _check(config: InferConfig) -> None:
    problems = ProblemList()
    for key in PATH_FIELDS:
        if isinstance(getattr(config, key), str) and not getattr(config, key).strip():
            problems.add(key, "must not be empty (leave the field out for its default)")
    for index, pattern in enumerate(config.model_paths or ()):
        if not pattern.strip():
            problems.add("model_path", f"names an empty path (item {index + 1})")
    check_device(config.device, problems)
    if config.inference_batch_size < 1:
        problems.add("inference_batch_size", f"must be at least 1, got {config.inference_batch_size}")
    if not 0 <= config.seed < 2**63:
        problems.add("seed", f"must be from 0 to 2**63-1 (ONNX Runtime's and numpy's seeds), got {config.seed}")
    if config.autoregressive and config.generation_steps is None:
        problems.add("generation_steps", "is required with autoregressive: true")
    if config.generation_steps is not None and not config.autoregressive:
        problems.add("generation_steps", "only applies with autoregressive: true")
    if config.generation_steps is not None and config.generation_steps < 1:
        problems.add("generation_steps", f"must be at least 1, got {config.generation_steps}")
    if config.window_stride is not None and config.window_stride < 1:
        problems.add("window_stride", f"must be at least 1, got {config.window_stride}")
    if config.window_stride is not None and config.autoregressive:
        problems.add(
            "window_stride",
            "applies to single-step prediction; autoregressive generation continues each window's newest items",
        )
    if config.prediction_alignment_steps != 1:
        problems.add(
            "prediction_alignment_steps",
            f"is {config.prediction_alignment_steps}, but only 1 is supported "
            "(sequifier preprocess writes no prediction-aligned splits)",
        )
    if config.model_type == "embedding":
        for key in ("autoregressive", "output_probabilities", "sample_from_distribution_columns"):
            if getattr(config, key):
                problems.add(key, "applies to generative models; model_type is 'embedding'")
    if config.training_config_path is None:
        if not config.model_paths:
            problems.add("model_path", "is required (or set training_config_path to use its model name)")
        if config.data_path is None and config.metadata_config_path is None and config.preprocessing_data_path is None:
            problems.add(
                "data_path",
                "set data_path, or metadata_config_path / preprocessing_data_path / "
                "training_config_path to infer on the metadata's last split",
            )
    problems.raise_if_any()


def load_infer_config(
    config_path: Path,
    data_path: str | None = None,
    model_path: str | None = None,
    seed: int | None = None,
    randomize: bool = False,
) -> InferConfig:
    """The infer config of `config_path` and its fragments, with command-line overrides; `randomize` draws a seed."""
    problems = ProblemList()
    config = build(InferConfig, resolved_file(Path(config_path)), "", problems)
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
