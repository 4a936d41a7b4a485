"""The preprocess run: read, encode, split, window, then write split files and metadata all-or-nothing."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from sequifier.config.preprocess import PreprocessConfig
from sequifier.data.metadata import SPECIAL_TOKEN_IDS, DatasetMetadata, write_metadata
from sequifier.data.preprocess.columns import resolve_column_types
from sequifier.data.preprocess.encoding import EncodedColumns, encode_columns
from sequifier.data.preprocess.reading import read_input
from sequifier.data.preprocess.splitting import item_split_index, sequence_layout, split_bounds
from sequifier.data.preprocess.windows import build_split_windows
from sequifier.data.stored import StoredWindows, write_split_parquet


def _log(message: str) -> None:
    print(f"[preprocess] {message}", file=sys.stderr, flush=True)


def split_file_name(config: PreprocessConfig, split: int) -> str:
    return f"{config.data_name}-split{split}.parquet"


def metadata_path(config: PreprocessConfig) -> Path:
    return config.project_root / "configs" / "metadata_configs" / f"{config.data_name}.json"


def _build_metadata(config: PreprocessConfig, column_types: dict[str, str], encoded: EncodedColumns) -> DatasetMetadata:
    n_splits = len(config.split_ratios)
    return DatasetMetadata(
        n_classes=encoded.n_classes,
        id_maps=encoded.id_maps,
        special_token_ids=dict(SPECIAL_TOKEN_IDS),
        split_paths=[f"./data/{split_file_name(config, i)}" for i in range(n_splits)],
        column_data_types=dict(column_types),
        selected_columns_statistics=encoded.statistics,
        normalize_real_columns=config.normalize_real_columns,
        window_length=config.window_length,
        window_lengths=[config.window_length] * n_splits,
        window_stride=config.effective_window_stride,
        max_target_offset=config.max_target_offset,
        normalize_on_all_data=config.normalize_on_all_data,
        split_ratios=list(config.split_ratios),
        split_method=config.split_method,
        split_column=config.split_column,
        split_values=config.split_values,
    )


def _build_windows(config: PreprocessConfig) -> tuple[list[StoredWindows], DatasetMetadata]:
    table, selected = read_input(config)
    sequence_ids = table.column("sequenceId").to_numpy()
    item_positions = table.column("itemPosition").to_numpy()
    starts, lengths = sequence_layout(sequence_ids)
    _log(f"read {table.num_rows} rows, {lengths.shape[0]} sequences from {config.preprocessing_data_path}")
    column_types = resolve_column_types(table.schema, selected, config)
    bounds = split_bounds(lengths, config.split_ratios)
    row_split = item_split_index(starts, lengths, bounds)
    fit_rows = np.ones_like(row_split, dtype=bool) if config.normalize_on_all_data else row_split == 0
    encoded = encode_columns(table, column_types, fit_rows, config.normalize_real_columns)
    splits = [
        build_split_windows(
            encoded.values,
            sequence_ids,
            item_positions,
            part_starts=starts + bounds[:, split],
            part_lengths=bounds[:, split + 1] - bounds[:, split],
            window_length=config.window_length,
            stride=config.effective_window_stride,
        )
        for split in range(len(config.split_ratios))
    ]
    return splits, _build_metadata(config, column_types, encoded)


def _staging_path(final: Path) -> Path:
    return final.with_name(f".{final.name}.{os.getpid()}.staging")


def _write_all_or_nothing(config: PreprocessConfig, splits: list[StoredWindows], metadata: DatasetMetadata) -> Path:
    """Stage every output next to its destination, then rename them all (metadata last).

    A failure while staging leaves earlier outputs untouched; a failure while renaming
    removes every output, so no mix of old and new files survives.
    """
    data_dir = config.project_root / "data"
    targets = [data_dir / split_file_name(config, i) for i in range(len(splits))]
    meta_target = metadata_path(config)
    staged: list[tuple[Path, Path]] = []
    placed: list[Path] = []
    try:
        for split, (windows, target) in enumerate(zip(splits, targets)):
            staged.append((_staging_path(target), target))
            write_split_parquet(staged[-1][0], windows, list(metadata.column_data_types))
            note = " (empty: no sequence has items in this split)" if len(windows) == 0 else ""
            _log(f"split {split}: {len(windows)} windows -> {target}{note}")
        staged.append((_staging_path(meta_target), meta_target))
        write_metadata(staged[-1][0], metadata)
        for staging, target in staged:
            os.replace(staging, target)
            placed.append(target)
    except BaseException:
        for staging, target in staged:
            staging.unlink(missing_ok=True)
            if placed:
                target.unlink(missing_ok=True)
        raise
    return meta_target


def run_preprocess(config: PreprocessConfig) -> Path:
    """Preprocess one input file into merged Parquet splits; returns the metadata JSON path."""
    started = time.perf_counter()
    splits, metadata = _build_windows(config)
    path = _write_all_or_nothing(config, splits, metadata)
    _log(f"metadata -> {path} ({time.perf_counter() - started:.2f}s)")
    return path
