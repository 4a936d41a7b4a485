"""Reusing an earlier part's metadata: its columns must match, its id maps and statistics are applied as they are."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from sequifier.config.errors import UserError, absent_file
from sequifier.config.preprocess import PreprocessConfig
from sequifier.data.metadata import DatasetMetadata, column_kind, read_metadata
from sequifier.preprocess.progress import log

# A real type a metadata may record (any case) -> the one its column is stored as.
STORED_REAL_TYPES = {"float16": "Float32", "float32": "Float32", "float64": "Float64"}


@dataclass(frozen=True)
class ReusedMeaning:
    """The metadata named by metadata_config_path and where it came from."""

    path: Path
    metadata: DatasetMetadata

    @property
    def columns(self) -> list[str]:
        return list(self.metadata.column_data_types)

    def mismatch(self, column: str, problem: str) -> UserError:
        return UserError(column, f"{problem}; the data must match the reused metadata")

    def check_types(self, types: dict[str, str], data_file: Path) -> None:
        """Every column here must exist there with the same kind (categorical vs real)."""
        known = self.metadata.column_data_types
        for column, column_type in types.items():
            if column not in known:
                raise self.mismatch(column, f"is a column of {data_file} but not of {self.path}")
            if column_kind(known[column]) != column_kind(column_type):
                raise self.mismatch(
                    column,
                    f"is {column_kind(known[column])} in {self.path} but {column_kind(column_type)} in {data_file} "
                    "(set categorical_columns/real_columns to match)",
                )
            needs_statistics = self.metadata.normalize_real_columns and column_kind(column_type) == "real"
            if needs_statistics and column not in self.metadata.selected_columns_statistics:
                raise self.mismatch(column, f"has no normalization statistics in {self.path} (needed for {data_file})")

    def stored_types(self, types: dict[str, str]) -> dict[str, str]:
        """`types` with each real column stored in the width the reused metadata records (as 3.x keeps it), so that
        the new splits' metadata matches it; a float16 column is stored as float32, the narrowest width written."""
        known = self.metadata.column_data_types
        return {
            column: STORED_REAL_TYPES.get(known[column].lower(), column_type)
            if column_kind(column_type) == "real"
            else column_type
            for column, column_type in types.items()
        }

    def normalization(self, config: PreprocessConfig) -> tuple[bool, bool]:
        """normalize_real_columns and normalize_on_all_data as the reused statistics were made; a note for each
        setting of the config that differs, since the config's is not applied (refused with depth layouts)."""
        used = (self.metadata.normalize_real_columns, self.metadata.normalize_on_all_data)
        stated = (config.normalize_real_columns, config.normalize_on_all_data)
        names = ("normalize_real_columns", "normalize_on_all_data")
        has_reals = any(column_kind(column_type) == "real" for column_type in self.metadata.column_data_types.values())
        for name, theirs, ours in zip(names, used, stated, strict=True):
            matters = has_reals and (name == names[0] or self.metadata.selected_columns_statistics)
            if theirs == ours or not matters:
                continue
            if self.metadata.depth_layouts:
                raise UserError(
                    name,
                    f"is {str(ours).lower()}, but the reused {self.path} of depth layouts was normalized with "
                    f"{str(theirs).lower()}; reusing a depth layout's metadata needs the identical normalization "
                    f"policy (as 3.x requires): set {name}: {str(theirs).lower()}",
                )
            log(
                f"note: {name} is {str(theirs).lower()} in the reused {self.path}, which this run applies with "
                f"its statistics and records (the config gives {str(ours).lower()})"
            )
        return used

    def check_layouts(self, layouts: dict[str, dict]) -> None:
        """Depth layouts must be the very ones the reused metadata was written with."""
        if self.metadata.depth_layouts != layouts:
            given = f"are {layouts}" if layouts else "are not set"
            theirs = self.metadata.depth_layouts or "none"
            raise UserError(
                "depth_layouts",
                f"{given}, but {self.path} was written with the depth layouts {theirs}; reusing metadata needs the "
                "identical layout definition",
            )


def load_reused(config: PreprocessConfig) -> Optional[ReusedMeaning]:
    if config.metadata_config_path is None:
        return None
    path = Path(config.project_root) / config.metadata_config_path
    if not path.is_file():
        raise UserError("metadata_config_path", f"{path} {absent_file(path)}")
    metadata = read_metadata(path)
    if metadata.cardinality_config:
        raise UserError(
            "metadata_config_path",
            f"{path} maps rare values to hash buckets (cardinality_config), which this release does not do, so "
            "they would become [other]; preprocess with the release that wrote it, or without that metadata",
        )
    return ReusedMeaning(path=path, metadata=metadata)
