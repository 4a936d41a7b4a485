"""Resolves a validated TrainConfig against preprocessing metadata into a frozen RunSpec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sequifier.config.errors import UserError
from sequifier.config.schema import InterfaceConfig, TrainConfig
from sequifier.config.validate import CRITERIA
from sequifier.data.metadata import DatasetMetadata, read_metadata


@dataclass(frozen=True)
class ColumnSpec:
    """What the model needs to know about one column."""

    name: str
    kind: str  # "categorical" or "real"
    n_classes: int = 0


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to train: plain, picklable, fully resolved."""

    config: TrainConfig
    model_name: str
    dataset_name: str
    part_name: str
    interface_name: str
    metadata: DatasetMetadata
    columns: dict[str, ColumnSpec]
    train_path: Path
    validation_path: Path | None
    project_root: Path
    run_dir: Path

    @property
    def interface(self) -> InterfaceConfig:
        return self.config.model.interfaces[self.interface_name]

    @property
    def models_dir(self) -> Path:
        return self.project_root / "models"

    @property
    def logs_dir(self) -> Path:
        return self.project_root / "logs" / self.model_name


def resolve(config: TrainConfig, run_dir: Path, cwd: Path | None = None) -> RunSpec:
    """Read each part's metadata and check the config against the stored data."""
    project_root = ((cwd or Path.cwd()) / config.project_root).resolve()
    dataset_name, dataset = next(iter(config.dataset_training.items()))
    part_name, part = next(iter(dataset.parts.items()))
    part_path = f"dataset_training.{dataset_name}.parts.{part_name}"
    metadata_path = project_root / part.metadata_config_path
    if not metadata_path.is_file():
        raise UserError(f"{part_path}.metadata_config_path", f"metadata file {metadata_path} does not exist (run `sequifier preprocess` first)")
    metadata = read_metadata(metadata_path)
    interface = config.model.interfaces[dataset.model_interface]
    columns = _column_specs(metadata, interface, dataset.model_interface, metadata_path)
    for target, criterion in dataset.criterion.items():
        if CRITERIA[criterion] != columns[target].kind:
            raise UserError(f"dataset_training.{dataset_name}.criterion.{target}", f"{criterion} needs a {CRITERIA[criterion]} column, but {target!r} is {columns[target].kind}")
    training = config.global_training
    needed = training.context_length + training.target_offset
    if needed > metadata.window_length:
        raise UserError("global_training.context_length", f"context_length {training.context_length} + target_offset {training.target_offset} exceeds the stored window length {metadata.window_length} of {metadata_path}")
    evaluated = config.evaluation is not None
    if evaluated and len(metadata.split_paths) < 2:
        raise UserError("evaluation", f"needs a validation split, but {metadata_path} lists only {len(metadata.split_paths)} split")
    return RunSpec(
        config=config,
        model_name=config.model_name,
        dataset_name=dataset_name,
        part_name=part_name,
        interface_name=dataset.model_interface,
        metadata=metadata,
        columns=columns,
        train_path=project_root / metadata.split_paths[0],
        validation_path=project_root / metadata.split_paths[1] if evaluated else None,
        project_root=project_root,
        run_dir=run_dir,
    )


def _column_specs(metadata: DatasetMetadata, interface: InterfaceConfig, interface_name: str, source: Path) -> dict[str, ColumnSpec]:
    specs = {}
    for role in ("input_columns", "target_columns"):
        for column in getattr(interface, role):
            if column not in metadata.column_data_types:
                known = ", ".join(metadata.column_data_types)
                raise UserError(f"model.interfaces.{interface_name}.{role}", f"column {column!r} is not in the preprocessed data {source} (columns: {known})")
            if column in metadata.categorical_columns:
                specs[column] = ColumnSpec(column, "categorical", metadata.n_classes[column])
            else:
                specs[column] = ColumnSpec(column, "real")
    return specs
