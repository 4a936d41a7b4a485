"""The preprocess config: its fields, the checks typed.build cannot express, and path resolution."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional, Union

from sequifier.config.files import read_yaml_mapping
from sequifier.config.typed import ProblemList, build, option

ID_COLUMNS = ("sequenceId", "itemPosition")
READ_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
# Key spellings of earlier releases -> the key used here.
KEY_ALIASES = {"data_path": "preprocessing_data_path"}
# Lower bounds of the integer fields (None, where allowed, is always fine).
MINIMUMS = {
    "window_length": 1, "window_stride": 1, "max_target_offset": 0, "max_rows": 1, "batches_per_file": 1, "n_cores": 1, "seed": 0,
}
PARQUET = {"pq": "parquet"}


@dataclass(frozen=True, kw_only=True)
class PreprocessConfig:
    """A preprocess config; once loaded, both paths are absolute `Path`s and read_format and window_stride are set."""

    preprocessing_data_path: Union[str, Path] = option(doc="the input CSV or Parquet file, relative to project_root (alias: data_path)")
    window_length: int = option(doc="items per stored window")
    project_root: Union[str, Path] = option(".", "folder outputs go to and relative paths resolve against (relative: to the working directory)")
    read_format: Optional[str] = option(None, "input format (default: from the file suffix)", choices=("csv", "parquet", "pt"), aliases=PARQUET)
    write_format: str = option("parquet", "format of the stored splits", choices=("parquet", "csv", "pt"), aliases=PARQUET)
    merge_output: bool = option(True, "write one file per split")
    selected_columns: Optional[tuple[str, ...]] = option(None, "feature columns to keep, in order (default: all but the identifiers)")
    categorical_columns: Optional[tuple[str, ...]] = option(None, "selected columns forced to be categorical")
    real_columns: Optional[tuple[str, ...]] = option(None, "selected columns forced to be real-valued")
    normalize_real_columns: bool = option(True, "standardize real columns with their mean and std")
    normalize_on_all_data: bool = option(False, "fit the normalization on all splits instead of the first")
    split_ratios: tuple[float, ...] = option((0.8, 0.1, 0.1), "share of each split; positive and summing to 1")
    split_method: str = option("within_sequence", "how rows are assigned to splits", choices=("within_sequence", "between_sequence", "value_cutoff"))
    split_column: Optional[str] = option(None, "column whose values decide the split (value_cutoff only)")
    split_values: Optional[tuple[Any, ...]] = option(None, "cutoff values of split_column (value_cutoff only)")
    window_stride: Optional[int] = option(None, "items between the starts of consecutive windows (default: window_length)")
    max_target_offset: int = option(1, "largest target offset training may use; windows hold one item more")
    max_rows: Optional[int] = option(None, "read only the first max_rows rows of the input")
    seed: int = option(1010, "seed of the preprocessing randomness")
    n_cores: int = option(1, "worker processes")
    batches_per_file: Optional[int] = option(None, "batches per output file (sharded output only)")
    metadata_config_path: Optional[str] = option(None, "an earlier metadata config to reuse id maps and statistics from")
    depth_layouts: Optional[dict[str, Any]] = option(None, "per-column depth layouts")

    @property
    def data_name(self) -> str:
        """Basename of the input, used to name outputs (`events` for `data/events.csv`)."""
        path = Path(self.preprocessing_data_path)
        return path.stem if path.suffix else path.name

    @property
    def effective_window_stride(self) -> int:
        return self.window_stride if self.window_stride is not None else self.window_length


def load_preprocess_config(
    config_path: Path, data_path: str | None = None, selected_columns: list[str] | None = None
) -> PreprocessConfig:
    """Read and validate a preprocess YAML; `data_path`/`selected_columns` override the file's values."""
    data = read_yaml_mapping(Path(config_path))
    problems = ProblemList()
    for alias, key in KEY_ALIASES.items():
        if alias in data and key in data:
            problems.add(alias, f"is another spelling of {key}; set only one of them")
        elif alias in data:
            data[key] = data.pop(alias)
    if data_path is not None:
        data["preprocessing_data_path"] = str(data_path)
    if selected_columns is not None:
        data["selected_columns"] = list(selected_columns)
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
    if config.window_length < config.max_target_offset + 1:
        problems.add("window_length", f"must be at least max_target_offset + 1 = {config.max_target_offset + 1}")
    ratios = config.split_ratios
    if not ratios or min(ratios) <= 0:
        problems.add("split_ratios", f"must be a non-empty list of positive numbers, got {list(ratios)}")
    elif abs(sum(ratios) - 1.0) > 1e-6:
        problems.add("split_ratios", f"must sum to 1, they sum to {sum(ratios):g}")
    for key in ("selected_columns", "categorical_columns", "real_columns"):
        columns = getattr(config, key) or ()
        if len(set(columns)) != len(columns):
            problems.add(key, "lists a column more than once")
    if set(config.selected_columns or ()) & set(ID_COLUMNS):
        problems.add("selected_columns", "must not list sequenceId or itemPosition (they are always used)")
    not_supported_yet = (
        ("read_format", config.read_format == "pt", "reading pt input is not supported yet (use csv or parquet)"),
        ("write_format", config.write_format != "parquet", f"{config.write_format!r} output is not supported yet (use parquet)"),
        ("merge_output", not config.merge_output, "unmerged (sharded) output is not supported yet (use true)"),
        ("split_method", config.split_method != "within_sequence", f"{config.split_method!r} is not supported yet (use within_sequence)"),
        ("metadata_config_path", config.metadata_config_path is not None, "reusing an earlier metadata config is not supported yet"),
        ("depth_layouts", bool(config.depth_layouts), "depth layouts are not supported yet"),
    )
    for key, used, problem in not_supported_yet:
        if used:
            problems.add(key, problem)

def _resolved(config: PreprocessConfig, problems: ProblemList) -> PreprocessConfig:
    """Absolute paths, the read_format inferred from the suffix, and window_stride defaulted to window_length."""
    root = (Path.cwd() / Path(config.project_root).expanduser()).resolve()
    data = root / Path(config.preprocessing_data_path).expanduser()
    read_format = config.read_format or READ_FORMATS.get(data.suffix.lower())
    if read_format is None:
        problems.add("read_format", "cannot tell the input format from the file name; set csv or parquet")
    return replace(
        config, project_root=root, preprocessing_data_path=data, read_format=read_format,
        window_stride=config.effective_window_stride,
    )
