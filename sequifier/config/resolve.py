"""Resolves a validated TrainConfig against preprocessing metadata into a frozen RunSpec."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sequifier.config.depth import check_depth, deep_columns
from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec, NetworkSpec, network_spec
from sequifier.config.schema import InterfaceConfig, TrainConfig, dataset_model_name
from sequifier.config.validate import CRITERIA
from sequifier.data.column_names import column_name_problem
from sequifier.data.fingerprint import values_of
from sequifier.data.metadata import DatasetMetadata, absent_metadata, read_metadata

PART_CONTRACT = (
    "column_data_types",
    "id_maps",
    "n_classes",
    "selected_columns_statistics",
    "normalize_real_columns",
    "window_length",
    "depth_layouts",
)


@dataclass(frozen=True)
class PartSpec:
    """One part of a dataset: its metadata and split files."""

    dataset: str
    part: str
    metadata_path: Path
    metadata: DatasetMetadata
    train_path: Path
    validation_path: Path | None


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to train: plain, picklable, fully resolved."""

    config: TrainConfig
    model_name: str
    parts: tuple[PartSpec, ...]
    columns: dict[str, dict[str, ColumnSpec]]  # per interface
    project_root: Path
    run_dir: Path

    def dataset_view(self, dataset: str) -> RunSpec:
        """The run as one dataset sees it: its parts, its interface, and its artifact name.

        Single-dataset runs name artifacts `<model>`, multi-dataset runs `<model>-<dataset>`.
        """
        interface = self.config.dataset_training[dataset].model_interface
        name = dataset_model_name(self.model_name, dataset, len(self.config.dataset_training))
        parts = tuple(p for p in self.parts if p.dataset == dataset)
        return replace(self, model_name=name, parts=parts, columns={interface: self.columns[interface]})

    @property
    def network(self) -> NetworkSpec:
        return network_spec(self.config, self.columns)

    @property
    def only_part(self) -> PartSpec:
        return self.parts[0]

    @property
    def dataset_name(self) -> str:
        return self.only_part.dataset

    @property
    def part_name(self) -> str:
        return self.only_part.part

    @property
    def metadata(self) -> DatasetMetadata:
        return self.only_part.metadata

    @property
    def train_path(self) -> Path:
        return self.only_part.train_path

    @property
    def validation_path(self) -> Path | None:
        return self.only_part.validation_path

    @property
    def interface_name(self) -> str:
        return self.config.dataset_training[self.dataset_name].model_interface

    @property
    def interface(self) -> InterfaceConfig:
        return self.config.model.interfaces[self.interface_name]

    @property
    def interface_columns(self) -> dict[str, ColumnSpec]:
        return self.columns[self.interface_name]

    @property
    def models_dir(self) -> Path:
        return self.project_root / "models"

    @property
    def logs_dir(self) -> Path:
        return self.project_root / "logs" / self.model_name


def evaluated_parts(config: TrainConfig) -> set[tuple[str, str]]:
    """(dataset, part) pairs that evaluation.sources select."""
    selected = set()
    for source in config.evaluation.sources if config.evaluation else ():
        dataset, _, part = source.source.partition(".")
        parts = [part] if part else list(config.dataset_training[dataset].parts)
        selected.update((dataset, p) for p in parts)
    return selected


def resolve(config: TrainConfig, run_dir: Path, cwd: Path | None = None) -> RunSpec:
    """Read each part's metadata and check the config against the stored data."""
    project_root = ((cwd or Path.cwd()) / config.project_root).resolve()
    evaluated = evaluated_parts(config)
    parts = []
    columns: dict[str, dict[str, ColumnSpec]] = {}
    for dataset_name, dataset in config.dataset_training.items():
        interface = config.model.interfaces[dataset.model_interface]
        first: PartSpec | None = None
        for part_name, part in dataset.parts.items():
            spec = _part_spec(
                config,
                project_root,
                dataset_name,
                part_name,
                part.metadata_config_path,
                (dataset_name, part_name) in evaluated,
            )
            if first is None:
                first = spec
            else:
                _check_same_contract(first, spec, f"dataset_training.{dataset_name}.parts")
            parts.append(spec)
        if first is None:
            continue
        dataset_columns = _column_specs(first.metadata, interface, dataset.model_interface, first.metadata_path)
        check_depth(config, dataset.model_interface, dataset_columns, first.metadata.depth_layouts, first.metadata_path)
        for target, criterion in dataset.criterion.items():
            if CRITERIA[criterion] != dataset_columns[target].kind:
                raise UserError(
                    f"dataset_training.{dataset_name}.criterion.{target}",
                    (
                        f"{criterion} needs a {CRITERIA[criterion]} column, "
                        f"but {target!r} is {dataset_columns[target].kind}"
                    ),
                )
        for column in interface.categorical_decoder_special_tokens or {}:
            if dataset_columns[column].kind != "categorical":
                raise UserError(
                    f"model.interfaces.{dataset.model_interface}.categorical_decoder_special_tokens.{column}",
                    f"{column!r} is real; special tokens apply to categorical targets",
                )
        for column in dataset.class_share_log_columns or ():
            if dataset_columns[column].kind != "categorical":
                raise UserError(
                    f"dataset_training.{dataset_name}.class_share_log_columns",
                    f"{column!r} is real; class shares need a categorical target",
                )
        known = columns.setdefault(dataset.model_interface, dataset_columns)
        if known != dataset_columns:
            raise UserError(
                f"dataset_training.{dataset_name}.model_interface",
                (
                    f"interface {dataset.model_interface!r} is shared with a dataset "
                    "whose columns differ in kind or classes"
                ),
            )
    _check_read_format(config.global_training.read_format, parts)
    return RunSpec(
        config=config,
        model_name=config.model_name,
        parts=tuple(parts),
        columns=columns,
        project_root=project_root,
        run_dir=run_dir,
    )


def _part_spec(
    config: TrainConfig, root: Path, dataset: str, part: str, metadata_config_path: str, evaluated: bool
) -> PartSpec:
    where = f"dataset_training.{dataset}.parts.{part}.metadata_config_path"
    metadata_path = root / metadata_config_path
    if not metadata_path.is_file():
        raise UserError(where, absent_metadata(metadata_path, naming_it=True))
    metadata = read_metadata(metadata_path)
    training = config.global_training
    needed = training.context_length + training.target_offset
    if needed > metadata.window_length:
        offset_is_too_far = training.target_offset > 1 and training.context_length < metadata.window_length
        field, other = ("target_offset", "context_length") if offset_is_too_far else ("context_length", "target_offset")
        largest = metadata.window_length - getattr(training, other)
        if field == "target_offset":
            largest = min(largest, metadata.max_target_offset)
        raise UserError(
            f"global_training.{field}",
            (
                f"context_length {training.context_length} + target_offset {training.target_offset} "
                f"exceeds the stored window length {metadata.window_length} of {metadata_path}"
                + (
                    f"; with {other} {getattr(training, other)}, {field} can be at most {largest}"
                    if largest > 0
                    else ""
                )
            ),
        )
    if training.target_offset > metadata.max_target_offset:
        raise UserError(
            "global_training.target_offset",
            f"{training.target_offset} exceeds max_target_offset {metadata.max_target_offset} of {metadata_path}, "
            f"the largest offset its windows were preprocessed for; preprocess with max_target_offset: "
            f"{training.target_offset} (as sequifier 3.x, which refuses it too)",
        )
    if evaluated and len(metadata.split_paths) < 2:
        raise UserError(where, f"part {dataset}.{part} is evaluated but {metadata_path} lists no validation split")
    train_path = root / metadata.split_paths[0]
    stored_as_folder = train_path.is_dir()
    if training.distributed and not stored_as_folder:
        raise UserError(
            where,
            f"distributed training reads a folder of shards, but {train_path.name} is a single merged file that "
            "every process would have to load whole; preprocess with merge_output: false (write_format: pt for "
            "production runs; parquet shards are beta)",
        )
    return PartSpec(
        dataset, part, metadata_path, metadata, train_path, root / metadata.split_paths[1] if evaluated else None
    )


def _holds_pt_shards(part: PartSpec) -> bool:
    return part.train_path.is_dir() and any(part.train_path.glob("*.pt"))


def _check_read_format(read_format: str, parts: list[PartSpec]) -> None:
    """One read_format reads every part of the run, so the parts must be stored in its form."""
    pt = [part for part in parts if _holds_pt_shards(part)]
    other = [part for part in parts if not _holds_pt_shards(part)]
    if pt and other:
        raise UserError(
            "global_training.read_format",
            f"one read_format reads every part, but dataset_training.{pt[0].dataset}.parts.{pt[0].part} is stored as "
            f"pt shards ({pt[0].train_path}) and dataset_training.{other[0].dataset}.parts.{other[0].part} is not "
            f"({other[0].train_path}); preprocess them with one write_format",
        )
    if read_format == "parquet" and pt:
        raise UserError(
            "global_training.read_format",
            f"parquet (or 3.x's csv) reads merged splits, but {pt[0].train_path} holds pt shards; set read_format: pt",
        )
    if read_format == "pt" and other:
        raise UserError(
            "global_training.read_format",
            f"pt was chosen but {other[0].train_path} holds no pt shards; set read_format: parquet",
        )


def _check_same_contract(first: PartSpec, other: PartSpec, where: str) -> None:
    for key in PART_CONTRACT:
        theirs, ours = getattr(first.metadata, key), getattr(other.metadata, key)
        if key == "id_maps":  # the same ids, whether a map lists the reserved ones or spells booleans as 3.x does
            theirs, ours = ({column: values_of(id_map) for column, id_map in maps.items()} for maps in (theirs, ours))
        if theirs != ours:
            raise UserError(
                where,
                (
                    f"parts {first.part!r} and {other.part!r} differ in {key} "
                    f"({first.metadata_path.name} vs {other.metadata_path.name}); "
                    "every part of a dataset needs the same schema, categories, normalization and window layout"
                ),
            )
    if first.train_path.is_dir() != other.train_path.is_dir():
        raise UserError(where, f"parts {first.part!r} and {other.part!r} use different storage forms (file vs folder)")


def _column_specs(
    metadata: DatasetMetadata, interface: InterfaceConfig, interface_name: str, source: Path
) -> dict[str, ColumnSpec]:
    specs = {}
    deep = deep_columns(metadata.depth_layouts)
    for role in ("input_columns", "target_columns"):
        for column in getattr(interface, role):
            if column not in metadata.column_data_types:
                known = ", ".join(metadata.column_data_types)
                raise UserError(
                    f"model.interfaces.{interface_name}.{role}",
                    f"column {column!r} is not in the preprocessed data {source} (columns: {known})",
                )
            problem = column_name_problem(column)
            if problem is not None:
                raise UserError(
                    f"model.interfaces.{interface_name}.{role}",
                    f"the column name {column!r} {problem}; rename the column in the data and preprocess again",
                )
            layout, capacity = deep.get(column, (None, 0))
            if column in metadata.categorical_columns:
                specs[column] = ColumnSpec(column, "categorical", metadata.n_classes[column], layout, capacity)
            else:
                specs[column] = ColumnSpec(column, "real", 0, layout, capacity)
    return specs
