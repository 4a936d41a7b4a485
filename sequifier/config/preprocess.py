"""The preprocess config: its fields, the checks typed.build cannot express, and path resolution."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from sequifier.config.fragments import resolved_file
from sequifier.config.typed import ProblemList, build, option

ID_COLUMNS = ("sequenceId", "itemPosition")
READ_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
# Key spellings of earlier releases -> the key used here.
KEY_ALIASES = {"data_path": "preprocessing_data_path"}
# Lower bounds of the integer fields (None, where allowed, is always fine).
MINIMUMS = {
    "window_length": 1,
    "window_stride": 1,
    "max_target_offset": 0,
    "max_rows": 1,
    "batches_per_file": 1,
    "n_cores": 1,
    "seed": 0,
}
MAX_WINDOW_LENGTH = 2**16  # stored windows hold a column per slot; far longer windows exhaust memory first
PARQUET = {"pq": "parquet"}


@dataclass(frozen=True, kw_only=True)
class DepthLayoutConfig:
    """A named depth layout: the raw rows sharing one (sequenceId, itemPosition) become one item with child slots."""

    position_column: str = option(doc="integer column giving each child row's position within its item")
    columns: tuple[str, ...] = option(doc="deep columns: one value per child (selected columns)")
    context_length: int = option(doc="capacity: child slots per item")
    position_base: int = option(0, "child position stored in slot 0 (slot = position - position_base)")
    allow_gaps: bool = option(False, "allow unoccupied slots between occupied ones (else they form a prefix)")

    def definition(self) -> dict[str, Any]:
        """The layout as the metadata records it (the 3.x key order)."""
        return {
            "position_column": self.position_column,
            "columns": list(self.columns),
            "context_length": self.context_length,
            "position_base": self.position_base,
            "allow_gaps": self.allow_gaps,
        }


@dataclass(frozen=True, kw_only=True)
class PreprocessConfig:
    """A preprocess config; once loaded, both paths are absolute `Path`s and read_format and window_stride are set."""

    preprocessing_data_path: Union[str, Path] = option(
        doc="the input CSV/Parquet file or folder of files, relative to project_root (alias: data_path)"
    )
    window_length: int = option(doc="items per stored window")
    project_root: Union[str, Path] = option(
        ".", "folder outputs go to and relative paths resolve against (relative: to the working directory)"
    )
    read_format: Optional[str] = option(
        None,
        "input format (default: from the file suffix, or the suffixes in the folder)",
        choices=("csv", "parquet"),
        aliases=PARQUET,
    )
    write_format: str = option(
        "parquet",
        "format of the stored splits: parquet (merged or sharded), pt (sharded), csv (merged)",
        choices=("parquet", "csv", "pt"),
        aliases=PARQUET,
    )
    merge_output: bool = option(True, "write one file per split (false: a folder of shards per split)")
    selected_columns: Optional[tuple[str, ...]] = option(
        None, "feature columns to keep, in order (default: all but the identifiers)"
    )
    categorical_columns: Optional[tuple[str, ...]] = option(None, "selected columns forced to be categorical")
    real_columns: Optional[tuple[str, ...]] = option(None, "selected columns forced to be real-valued")
    normalize_real_columns: bool = option(True, "standardize real columns with their mean and std")
    normalize_on_all_data: bool = option(False, "fit the normalization on all splits instead of the first")
    split_ratios: tuple[float, ...] = option((0.8, 0.1, 0.1), "share of each split; positive and summing to 1")
    split_method: str = option(
        "within_sequence",
        "how rows are assigned to splits",
        choices=("within_sequence", "between_sequence", "value_cutoff"),
    )
    split_column: Optional[str] = option(None, "column whose values decide the split (value_cutoff only)")
    split_values: Optional[tuple[Any, ...]] = option(
        None, "increasing cutoffs of split_column, one fewer than the splits (value_cutoff only)"
    )
    window_stride: Optional[int] = option(
        None, "items between the starts of consecutive windows (default: window_length)"
    )
    max_target_offset: int = option(1, "largest target offset training may use; windows hold one item more")
    max_rows: Optional[int] = option(None, "read only the first max_rows rows of the input (files in name order)")
    seed: int = option(1010, "seed of the preprocessing randomness (the between_sequence assignment)")
    randomize: bool = option(
        False, "draw a fresh seed instead of `seed`; it is printed and recorded in the metadata as `seed`"
    )
    n_cores: int = option(1, "worker processes over sequence groups")
    batches_per_file: Optional[int] = option(None, "sequence groups per shard file (sharded output only; default 1)")
    metadata_config_path: Optional[str] = option(
        None, "an earlier metadata config to reuse id maps and statistics from"
    )
    depth_layouts: Optional[dict[str, DepthLayoutConfig]] = option(
        None, "named depth layouts: child rows of one item stored as [capacity] slots (pt output; at most one)"
    )

    @property
    def data_name(self) -> str:
        """Basename of the input, used to name outputs (`events` for `data/events.csv` or folder `data/events/`)."""
        path = Path(self.preprocessing_data_path)
        return path.name if path.is_dir() or not path.suffix else path.stem

    @property
    def effective_window_stride(self) -> int:
        return self.window_stride if self.window_stride is not None else self.window_length

    @property
    def n_splits(self) -> int:
        return len(self.split_ratios)

    @property
    def depth_layout(self) -> Optional[tuple[str, DepthLayoutConfig]]:
        """The one depth layout (name, definition), if any."""
        return next(iter(self.depth_layouts.items())) if self.depth_layouts else None


def load_preprocess_config(
    config_path: Path, data_path: str | None = None, selected_columns: list[str] | None = None, randomize: bool = False
) -> PreprocessConfig:
    """Read and validate a preprocess YAML (with its additional_config_paths fragments); arguments override the file."""
    data = resolved_file(Path(config_path))
    problems = ProblemList()
    for alias, key in KEY_ALIASES.items():
        if alias in data and key in data:
            problems.add(alias, f"is another spelling of {key}; set only one of them")
            del data[alias]
        elif alias in data:
            data[key] = data.pop(alias)
    if data_path is not None:
        data["preprocessing_data_path"] = str(data_path)
    if selected_columns is not None:
        data["selected_columns"] = list(selected_columns)
    if randomize:
        data["randomize"] = True
    config = build(PreprocessConfig, data, "", problems)
    problems.raise_if_any()
    _check(config, problems)
    problems.raise_if_any()
    config = _resolved(config, problems)
    problems.raise_if_any()
    return config


def _check(config: PreprocessConfig, problems: ProblemList) -> None:
    for key, minimum in MINIMUMS.items():
        value = getattr(config, key)
        if value is not None and value < minimum:
            problems.add(key, f"must be at least {minimum}, got {value}")
    if config.window_length > MAX_WINDOW_LENGTH:
        problems.add(
            "window_length",
            f"must be at most {MAX_WINDOW_LENGTH:,} (stored windows hold a column per item), "
            f"got {config.window_length:,}",
        )
    if config.window_length < config.max_target_offset + 1:
        problems.add("window_length", f"must be at least max_target_offset + 1 = {config.max_target_offset + 1}")
    ratios = config.split_ratios
    if not ratios or min(ratios) <= 0:
        problems.add("split_ratios", f"must be a non-empty list of positive numbers, got {list(ratios)}")
    elif abs(sum(ratios) - 1.0) > 1e-6:
        problems.add("split_ratios", f"must sum to 1, they sum to {sum(ratios):g}")
    if not str(config.project_root).strip():
        problems.add("project_root", "must not be empty (leave it out for the working directory)")
    if not str(config.preprocessing_data_path).strip():
        problems.add("preprocessing_data_path", "must not be empty; give the input file or folder of files")
    for key in ("selected_columns", "categorical_columns", "real_columns"):
        columns = getattr(config, key) or ()
        if len(set(columns)) != len(columns):
            problems.add(key, "lists a column more than once")
        for index, column in enumerate(columns):
            if not column:
                problems.add(f"{key}[{index}]", "names no column (an empty name)")
    if config.selected_columns is not None and not config.selected_columns:
        problems.add(
            "selected_columns", "must list at least one feature column, or be null for all but the identifiers"
        )
    if set(config.selected_columns or ()) & set(ID_COLUMNS):
        problems.add("selected_columns", "must not list sequenceId or itemPosition (they are always used)")
    _check_output_form(config, problems)
    _check_split_policy(config, problems)
    if config.depth_layouts:
        _check_depth_layouts(config, problems)


def _check_depth_layouts(config: PreprocessConfig, problems: ProblemList) -> None:
    """The rules of 3.x for raw depth layouts that need no data."""
    if len(config.depth_layouts) > 1:
        problems.add(
            "depth_layouts", f"at most one depth layout per preprocessing run, got {len(config.depth_layouts)}"
        )
    if config.write_format != "pt" or config.merge_output:
        problems.add("depth_layouts", "are written as pt shards only: set write_format: pt and merge_output: false")
    if config.max_rows is not None:
        problems.add("max_rows", "cannot be combined with depth_layouts (it counts rows, not items)")
    selected = config.selected_columns
    for name, layout in config.depth_layouts.items():
        where = f"depth_layouts.{name}"
        if layout.context_length < 1:
            problems.add(f"{where}.context_length", f"must be at least 1, got {layout.context_length}")
        if not layout.columns or len(set(layout.columns)) != len(layout.columns):
            problems.add(f"{where}.columns", "must list at least one column, each once")
        position = layout.position_column
        roles = {
            **{column: "a selected column" for column in selected or ()},
            **{column: "a deep column" for column in layout.columns},
            config.split_column: "the split_column",
            **{column: "an identifier" for column in ID_COLUMNS},
        }
        if position in roles:
            problems.add(
                f"{where}.position_column",
                f"{position!r} is {roles[position]}; the depth position is read on its own and cannot be a feature",
            )
        for column in layout.columns:
            if selected is not None and column not in selected:
                problems.add(f"{where}.columns", f"{column!r} is not a selected column")


def _check_output_form(config: PreprocessConfig, problems: ProblemList) -> None:
    if config.write_format == "pt" and config.merge_output:
        problems.add("merge_output", "write_format 'pt' writes a folder of shards per split; set merge_output: false")
    if config.write_format == "csv" and not config.merge_output:
        problems.add(
            "merge_output",
            "write_format 'csv' is written as one file per split; set merge_output: true (or use parquet/pt shards)",
        )


def _check_split_policy(config: PreprocessConfig, problems: ProblemList) -> None:
    if config.split_method != "value_cutoff":
        for key in ("split_column", "split_values"):
            if getattr(config, key) is not None:
                problems.add(
                    key, f"only applies to split_method value_cutoff (split_method is {config.split_method!r})"
                )
        return
    if config.split_column is None:
        problems.add("split_column", "value_cutoff needs the column whose values decide the split")
    if config.split_column in ID_COLUMNS:
        problems.add(
            "split_column",
            f"cannot be {config.split_column}, which identifies items; split by another column (a copy of it works)",
        )
    values = config.split_values
    if len(config.split_ratios) < 2:
        problems.add(
            "split_ratios",
            "value_cutoff divides the items at its cutoffs into at least two splits, but split_ratios lists one; "
            "for a single split, use split_method: within_sequence",
        )
        return
    if not values:
        n = len(config.split_ratios)
        problems.add("split_values", f"value_cutoff needs the cutoffs: {n - 1} for the {n} splits of split_ratios")
        return
    if len(values) != len(config.split_ratios) - 1:
        problems.add(
            "split_values",
            f"{len(values)} cutoff(s) make {len(values) + 1} splits, but split_ratios lists {len(config.split_ratios)}",
        )
    if not all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in values):
        problems.add("split_values", "cutoffs must be numbers or strings (dates and times as ISO strings)")
    elif len({type(v) is str for v in values}) > 1:
        problems.add("split_values", "mixes numbers and strings")
    elif any(isinstance(v, float) and not math.isfinite(v) for v in values):
        problems.add("split_values", f"cutoffs must be finite numbers, got {list(values)}")
    elif any(not a < b for a, b in zip(values, values[1:])):
        problems.add("split_values", f"must be strictly increasing, got {list(values)}")


def _folder_read_format(folder: Path, problems: ProblemList) -> Optional[str]:
    formats = _formats(p for p in folder.iterdir() if p.is_file())
    if not formats:  # a partitioned layout (year=2020/...): reading the files' format names the subfolder
        nested = _formats(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
        formats = nested if len(nested) == 1 else formats
    if len(formats) > 1:
        problems.add("read_format", f"{folder} holds both csv and parquet files; set read_format to choose")
    elif not formats:
        problems.add(str(folder), "the input folder holds no .csv or .parquet files")
    return formats.pop() if len(formats) == 1 else None


def _formats(files: Iterable[Path]) -> set[str]:
    return {READ_FORMATS[p.suffix.lower()] for p in files if p.suffix.lower() in READ_FORMATS}


def _resolved(config: PreprocessConfig, problems: ProblemList) -> PreprocessConfig:
    """Absolute paths, the read_format inferred from the suffix(es), and window_stride defaulted to window_length."""
    root = (Path.cwd() / Path(config.project_root).expanduser()).resolve()
    data = root / Path(config.preprocessing_data_path).expanduser()
    read_format = config.read_format
    if read_format is None and data.is_dir() and data.resolve() == root / "data":
        problems.add(
            str(data),
            "the input folder is the output folder (<project_root>/data); move the input files into a subfolder",
        )
    elif read_format is None and data.is_dir():
        read_format = _folder_read_format(data, problems)
    elif read_format is None:
        read_format = READ_FORMATS.get(data.suffix.lower())
        if read_format is None:
            problems.add("read_format", "cannot tell the input format from the file name; set csv or parquet")
    return replace(
        config,
        project_root=root,
        preprocessing_data_path=data,
        read_format=read_format,
        window_stride=config.effective_window_stride,
    )
