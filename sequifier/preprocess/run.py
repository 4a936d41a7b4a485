"""The preprocess run: scan, partition into sequence groups, fit, write per group, then place every output at once."""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa

from sequifier.atomic import is_temp_of
from sequifier.config.errors import UserError, os_problem
from sequifier.config.preprocess import PreprocessConfig
from sequifier.data.fingerprint import recorded_meanings
from sequifier.data.folder_metadata import write_folder_metadata
from sequifier.data.metadata import SPECIAL_TOKEN_IDS, DatasetMetadata, write_metadata
from sequifier.preprocess.columns import ColumnPlan, plan_columns
from sequifier.preprocess.depth import DEPTH_PAYLOAD_VERSION, DEPTH_WINDOWS_PER_SHARD
from sequifier.preprocess.groups import (
    DuplicatePosition,
    Group,
    locate_duplicate,
    partition,
    plan_groups,
    window_slots,
)
from sequifier.preprocess.idmaps import CategoricalMeaning, codes_for, column_meaning, static_map_path
from sequifier.preprocess.moment_tree import TreeNodes, tree_moments
from sequifier.preprocess.outputs import MergedSplitWriter, OutputForm
from sequifier.preprocess.parallel import run_tasks, usable_cpus
from sequifier.preprocess.progress import log
from sequifier.preprocess.reuse import ReusedMeaning, load_reused
from sequifier.preprocess.scan import DistinctValues, ScanResult, scan
from sequifier.preprocess.signals import signals_as_exit
from sequifier.preprocess.sources import InputSource, input_files, open_source
from sequifier.preprocess.splitting import SplitPolicy, cutoff_values, sequence_splits
from sequifier.preprocess.staging import KEPT, SPLIT_OUTPUT_SUFFIX, Staging
from sequifier.preprocess.statistics import constant_fit_warning, squeeze_warning, statistics_of
from sequifier.preprocess.tasks import PositionGaps, SharedWork, WriteTask, fit_group, write_task
from sequifier.progress import Progress


def metadata_path(config: PreprocessConfig) -> Path:
    return Path(config.project_root) / "configs" / "metadata_configs" / f"{config.data_name}.json"


def output_folder(config: PreprocessConfig) -> Path:
    return Path(config.project_root) / "data"


def _seed(config: PreprocessConfig) -> int:
    if not config.randomize:
        return config.seed
    seed = secrets.randbelow(2**31)
    log(f"randomize: using seed {seed} (recorded in the metadata as `seed`)")
    return seed


def _split_policy(config: PreprocessConfig, source: InputSource, scanned: ScanResult, seed: int) -> SplitPolicy:
    policy = SplitPolicy(
        method=config.split_method, ratios=tuple(config.split_ratios), split_column=config.split_column
    )
    if config.split_method == "between_sequence":
        splits = sequence_splits(scanned.sequence_ids, policy.ratios, seed)
        return replace(policy, sequence_ids=scanned.sequence_ids, sequence_splits=splits)
    if config.split_method == "value_cutoff":
        arrow_type = source.schema.field(config.split_column).type
        return replace(policy, cutoffs=cutoff_values(tuple(config.split_values), config.split_column, arrow_type))
    return policy


def _meanings(
    config: PreprocessConfig, columns: ColumnPlan, fitted_values: dict[str, pa.Array], reused: Optional[ReusedMeaning]
) -> dict[str, CategoricalMeaning]:
    """Id map per categorical column; one built from the data holds the values of the rows used for fitting."""
    meanings = {}
    for name in columns.categorical:
        earlier = None
        if reused is not None:
            earlier = CategoricalMeaning(reused.metadata.id_maps[name], reused.metadata.n_classes[name])
        meanings[name] = column_meaning(name, fitted_values[name], Path(config.project_root), earlier)
    return meanings


def _check_static_maps(config: PreprocessConfig, columns: ColumnPlan) -> None:
    """A static id map for a real column is a contradiction (unless an earlier metadata decides the meanings)."""
    for name in columns.real:
        path = static_map_path(Path(config.project_root), name)
        if path.is_file() and config.metadata_config_path is None:
            raise UserError(name, f"is a real column, but {path} gives it an id map (list it in categorical_columns)")


def _fit(
    shared: SharedWork,
    source: InputSource,
    groups: list[Group],
    config: PreprocessConfig,
    scanned: ScanResult,
    reused: Optional[ReusedMeaning],
) -> tuple[dict, dict[str, pa.Array]]:
    """Statistics per real column (reused ones, else fitted), and per categorical column the sorted distinct values
    of the rows used for fitting. The pass also checks for duplicate positions.
    """
    progress = Progress("preprocess fit", sum(g.rows for g in groups))
    nodes: dict[str, list[TreeNodes]] = {name: [] for name in shared.columns.real}
    spans = {name: (np.inf, -np.inf) for name in shared.columns.real}
    distinct = {name: DistinctValues(scanned.values[name].type) for name in shared.columns.categorical}
    gaps = PositionGaps()
    try:
        for group, fit in zip(groups, run_tasks(fit_group, shared, groups, config.n_cores), strict=True):
            for name, part in fit.moments.items():
                nodes[name].append(part)
            for name, (low, high) in fit.spans.items():
                spans[name] = (min(spans[name][0], low), max(spans[name][1], high))
            for name, values in fit.values.items():
                distinct[name].add(values)
            gaps = gaps.merged(fit.gaps)
            progress.advance(group.rows)
    except DuplicatePosition as duplicate:
        progress.close()
        raise locate_duplicate(source, duplicate) from None
    progress.close()
    if gaps.example is not None:
        sequence, position, following = gaps.example
        log(
            f"warning: itemPosition: in {gaps.sequences} of {len(scanned.sequence_lengths)} sequences the items of a "
            f"split are not at consecutive positions (sequenceId {sequence}: {position}, then {following}); stored "
            "windows record each window's first position, so infer labels the items after it as if consecutive"
        )
    fitted_values = {name: values.result() for name, values in distinct.items()}
    if reused is not None:
        known = reused.metadata.selected_columns_statistics
        return {name: dict(known[name]) for name in nodes if name in known}, fitted_values
    totals = {name: tree_moments(parts, shared.shifts[name]) for name, parts in nodes.items()}
    statistics = {name: statistics_of(name, moments) for name, moments in totals.items()}
    for name, moments in totals.items():
        warning = squeeze_warning(name, moments, statistics[name]["std"]) or constant_fit_warning(
            name, moments, spans[name]
        )
        if warning and config.normalize_real_columns:
            log(warning)
    return statistics, fitted_values


def _write(shared: SharedWork, groups: list[Group], config: PreprocessConfig) -> list[list[dict]]:
    """Run the write tasks; merged splits are assembled as parts arrive. Returns per split its shard entries."""
    per_file = 1 if shared.output.merged or config.depth_layouts else (config.batches_per_file or 1)
    tasks = [WriteTask(i, tuple(groups[s : s + per_file])) for i, s in enumerate(range(0, len(groups), per_file))]
    merged = [MergedSplitWriter(shared.output, s) for s in range(shared.split.n_splits)] if shared.output.merged else []
    progress = Progress("preprocess write", sum(g.rows for g in groups))
    entries: list[list[dict]] = [[] for _ in range(shared.split.n_splits)]
    try:
        for task, results in zip(tasks, run_tasks(write_task, shared, tasks, config.n_cores), strict=True):
            for split, split_entries in enumerate(results):
                for entry in split_entries:
                    if merged:
                        merged[split].append(entry)
                    else:
                        entries[split].append(entry)
            progress.advance(sum(g.rows for g in task.groups))
    finally:
        progress.close()
        for writer in merged:
            writer.close()
    if merged:
        return [[{"samples": writer.samples}] for writer in merged]
    return entries


def _metadata(
    config: PreprocessConfig,
    form: OutputForm,
    columns: ColumnPlan,
    meanings: dict[str, CategoricalMeaning],
    statistics: dict,
    normalization: tuple[bool, bool],
    seed: int,
) -> DatasetMetadata:
    n_splits = config.n_splits
    return DatasetMetadata(
        n_classes={name: meaning.n_classes for name, meaning in meanings.items()},
        id_maps={name: dict(meaning.id_map) for name, meaning in meanings.items()},
        special_token_ids=dict(SPECIAL_TOKEN_IDS),
        split_paths=[f"./data/{form.split_name(i)}" for i in range(n_splits)],
        column_data_types=dict(columns.types),
        selected_columns_statistics=statistics,
        normalize_real_columns=normalization[0],
        window_length=config.window_length,
        window_lengths=[config.window_length] * n_splits,
        window_stride=config.effective_window_stride,
        max_target_offset=config.max_target_offset,
        normalize_on_all_data=normalization[1],
        split_ratios=list(config.split_ratios),
        split_method=config.split_method,
        split_column=config.split_column,
        split_values=list(config.split_values) if config.split_values is not None else None,
        depth_layouts={name: layout.definition() for name, layout in (config.depth_layouts or {}).items()},
        tensor_payload_version=DEPTH_PAYLOAD_VERSION if config.depth_layouts else 1,
        extra={"seed": seed} if config.randomize else {},
    )


def _refuse_foreign_targets(config: PreprocessConfig, form: OutputForm) -> None:
    """Outputs replace earlier outputs whole, so they must not replace anything else."""
    for split in range(len(config.split_ratios)):
        target = output_folder(config) / form.split_name(split)
        problem = form.foreign_target(target, split)
        if problem is not None:
            raise UserError(str(target), f"{problem}; move it away (an output replaces what is there whole)")
        for name in form.companion_names(split):
            _refuse_unless_file(output_folder(config) / name, "the meanings file of an earlier split")
    _refuse_unless_file(metadata_path(config), "an earlier metadata file")


def _refuse_unless_file(target: Path, earlier: str) -> None:
    """A file an output replaces must be a plain file (what an earlier run wrote there), or nothing."""
    if os.path.lexists(target) and (target.is_symlink() or not target.is_file()):
        raise UserError(
            str(target),
            f"is a folder, link or other entry, not {earlier}; move it away (an output replaces what is there whole)",
        )


def _preprocess(config: PreprocessConfig, staging: Staging, seed: int, reused: Optional[ReusedMeaning]) -> Path:
    unplanned_form = OutputForm(
        write_format=config.write_format,
        merged=config.merge_output,
        data_name=config.data_name,
        stage=staging.outputs,
        parts=staging.parts,
        column_types={},
        window_length=config.window_length,
    )
    _refuse_foreign_targets(config, unplanned_form)
    staged_metadata = staging.reserve_beside(metadata_path(config))
    columns, source = plan_columns(config, open_source(config, reused and reused.metadata.id_maps), reused)
    _check_static_maps(config, columns)
    scanning = Progress("preprocess scan", source.progress_total)
    scanned = scan(source, columns, config.window_length, scanning)
    scanning.close()
    if scanned.rows == 0:
        raise UserError(str(config.preprocessing_data_path), "the input has no rows")
    log(f"read {scanned.rows} rows, {scanned.sequence_ids.shape[0]} sequences from {config.preprocessing_data_path}")
    longest = int(scanned.sequence_lengths.max())
    if not config.depth_layouts and config.window_length > 2 * longest:
        log(
            f"warning: window_length {config.window_length} is over twice the longest sequence ({longest} items): "
            "every window is mostly padding, which costs space and time; a window_length near the longest sequence "
            "holds the same items"
        )
    normalize, on_all_data = (
        reused.normalization(config) if reused else (config.normalize_real_columns, config.normalize_on_all_data)
    )
    form = replace(
        unplanned_form,
        column_types=dict(columns.types),
        windows_per_shard=(config.batches_per_file or DEPTH_WINDOWS_PER_SHARD) if config.depth_layouts else None,
    )
    shared = SharedWork(
        columns=columns,
        split=_split_policy(config, source, scanned, seed),
        fit_on_all_data=on_all_data,
        codes={},
        statistics={},
        normalize=normalize,
        window_length=config.window_length,
        stride=config.effective_window_stride,
        output=form,
        shifts=scanned.first_reals,
    )
    per_task = 1 if config.merge_output or config.depth_layouts else (config.batches_per_file or 1)
    min_groups = config.n_cores * per_task
    slots = window_slots(scanned.sequence_lengths, config.window_length, config.effective_window_stride)
    bounds = plan_groups(slots, min_groups)
    partitioning = Progress("preprocess partition", source.progress_total)
    groups = partition(source, columns, scanned.sequence_ids, bounds, staging.spill, partitioning)
    partitioning.close()
    pa.default_memory_pool().release_unused()  # forked workers would otherwise inherit the freed-but-kept pages
    statistics, fitted_values = _fit(shared, source, groups, config, scanned, reused)
    meanings = _meanings(config, columns, fitted_values, reused)
    codes = {name: codes_for(name, scanned.values[name], meaning) for name, meaning in meanings.items()}
    metadata = _metadata(config, form, columns, meanings, statistics, (normalize, on_all_data), seed)
    form = replace(form, recorded_meanings=recorded_meanings(metadata))
    shared = replace(shared, statistics=statistics, codes=codes, output=form)
    entries = _write(shared, groups, config)
    moves = []
    for split, split_entries in enumerate(entries):
        staged = form.stage / form.split_name(split)
        if not form.merged:
            staged.mkdir(parents=True, exist_ok=True)
            write_folder_metadata(staged, split, metadata, split_entries)
        samples = sum(entry["samples"] for entry in split_entries)
        target = output_folder(config) / form.split_name(split)
        note = " (empty: no sequence has items in this split)" if samples == 0 else ""
        log(f"split {split}: {samples} windows -> {target}{note}")
        moves.append((staged, target))
        moves.extend((form.stage / name, output_folder(config) / name) for name in form.companion_names(split))
    write_metadata(staged_metadata, metadata)
    moves.append((staged_metadata, metadata_path(config)))
    staging.place(moves)
    _note_earlier_splits(output_folder(config), form.data_name, {target.name for _, target in moves})
    return metadata_path(config)


def _note_earlier_splits(folder: Path, data_name: str, written: set[str]) -> None:
    """Name the splits of earlier runs (more splits, another write_format) that stay beside this run's."""
    pattern = re.compile(re.escape(data_name) + SPLIT_OUTPUT_SUFFIX)
    earlier = sorted(
        entry.name for entry in folder.iterdir() if pattern.fullmatch(entry.name) and entry.name not in written
    )
    if earlier:
        log(
            f"note: {', '.join(earlier)} in {folder} are not this run's outputs (an earlier run's splits, or files "
            "named like them); the metadata lists only this run's, so they are never read through it"
        )


def run_preprocess(config: PreprocessConfig) -> Path:
    """Preprocess the input file or folder into stored windows per split; returns the metadata JSON path.

    Outputs appear all together or not at all: an error or interruption leaves the previous outputs as they were.
    """
    started = time.perf_counter()
    seed = _seed(config)
    cpus = usable_cpus()
    if config.n_cores > cpus:
        log(f"n_cores {config.n_cores} is more than the CPUs this process may use ({cpus}); using {cpus}")
        config = replace(config, n_cores=cpus)
    if config.merge_output and config.batches_per_file is not None:
        log("note: batches_per_file has no effect with merge_output: true (each split is one file)")
    if config.write_format == "pt":
        import torch  # noqa: F401  (once here, not in every forked worker)
    with signals_as_exit():
        reused = load_reused(config)
        input_files(config)  # a missing input is named before staging makes any folder
        try:
            staging = Staging(output_folder(config), metadata_path(config).parent)
        except OSError as error:
            kept = KEPT if metadata_path(config).exists() else ""
            raise UserError(
                str(output_folder(config)), f"cannot stage outputs there ({os_problem(error)}){kept}"
            ) from None
        try:
            path = _preprocess(config, staging, seed, reused)
        except UserError as error:
            if not staging.failure_note():
                raise
            raise UserError(error.where, error.problem + staging.failure_note()) from None
        except OSError as error:
            where = Path(error.filename or output_folder(config))
            if is_temp_of(where, metadata_path(config)):
                where = metadata_path(config)  # the file the user knows, not the temp staged beside it
            raise UserError(str(where), os_problem(error) + staging.failure_note()) from None
        except SystemExit:
            log(f"stopped by a signal{staging.failure_note()}")
            raise
        finally:
            staging.remove()
    log(f"metadata -> {path} ({time.perf_counter() - started:.2f}s)")
    return path
