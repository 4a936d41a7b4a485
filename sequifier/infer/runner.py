"""`sequifier infer`: resolve models and data, check them against the contracts, predict, write part files.

Each stored window is read through its model views (windows.py): a generative model predicts
the last prediction_length items of each view, an embedding model returns the final backbone
states of the view's last prediction_length input items; rows outside the data are dropped
(rows.py). Autoregression starts from each window's newest items and generates the items after it.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from sequifier.config.entries import not_utf8, shown
from sequifier.config.errors import UserError, missing_folder, os_problem
from sequifier.config.infer import InferConfig, load_infer_config, metadata_path_of_preprocessing, notices
from sequifier.data.fingerprint import check_same_meanings, records_these_meanings
from sequifier.data.folder_metadata import FOLDER_METADATA, folder_meanings
from sequifier.data.metadata import read_metadata
from sequifier.data.stored_windows import StoredWindows, check_window_length
from sequifier.infer import checks
from sequifier.infer.generation import Chooser, Model, generate, run_batched
from sequifier.infer.onnx_model import OnnxModel
from sequifier.infer.outputs import OUTPUT_KINDS, embeddings_table, generative_tables, write_table
from sequifier.infer.route import TrainingRoute, training_route
from sequifier.infer.rows import label_rows
from sequifier.infer.staged_parts import StagedParts
from sequifier.infer.windows import (
    StoredSplit,
    generation_start,
    model_inputs,
    open_split,
    view_starts,
    window_arrays,
)
from sequifier.progress import Progress

__all__ = ["model_inputs", "run_inference"]
WINDOWS_PER_PART = 100_000


def resolve_model_path(project_root: Path, pattern: str, unmatched_fix: str = "train a model first") -> Path:
    """The model file, or the newest file matching a glob pattern (a file of that very name comes first, and
    the project root is never read as a pattern); `unmatched_fix` says what makes the pattern match."""
    full = str(project_root / pattern)
    if not glob.has_magic(pattern) or os.path.isfile(full):
        return Path(full)
    matches = _matches_oldest_first(project_root, pattern)
    if not matches and (literal := re.sub(r"([\[\]?])", r"[\1]", pattern)) != pattern:
        matches = _matches_oldest_first(project_root, literal)  # sweeps name models `m-betas=[0.9,0.99]`
        if matches:
            print(f"note: model_path {pattern!r} matches no file as a pattern; '[', ']' and '?' taken as themselves, "
                  f"it matches {os.path.basename(matches[-1])}")  # fmt: skip
    if not matches:
        fixed = Path(*itertools.takewhile(lambda part: not glob.has_magic(part), Path(full).parts))
        folder = missing_folder(fixed / "pattern")
        if not folder and fixed.is_file():
            folder = f"; {fixed} is a file, not a folder"
        fix = "give a pattern under a folder that exists" if folder else unmatched_fix
        raise UserError("model_path", f"no model file matches {full}{folder}; {fix}")
    if not_utf8(matches[-1]):
        raise UserError(
            "model_path", f"{full} matches {shown(matches[-1])!r}, whose name is not UTF-8 (shown as ?); rename it"
        )
    return Path(matches[-1])


def _matches_oldest_first(project_root: Path, pattern: str) -> list[str]:
    return sorted(glob.glob(os.path.join(glob.escape(str(project_root)), pattern)), key=os.path.getmtime)


def open_model(path: Path, config: InferConfig, route: TrainingRoute | None) -> Model:
    """An ONNX model or, for `.pt`, a PT bundle, checked against the config's model type, dropout and generation.

    A run-wide PT bundle serves the interface the config names, or else the one of the route's dataset.
    """
    if path.suffix == ".pt":
        from sequifier.infer.pt_model import PtModel  # torch only when a PT bundle is used

        interface = config.model_interface or (route.expected["model_interface"] if route else None)
        model: Model = PtModel(path, config.model_type, config.infer_with_dropout, config.device, interface)
    else:
        model = OnnxModel(path, config.device)
    contract = model.contract
    checks.check_model_type(config.model_type, contract, path)
    checks.check_dropout(config.infer_with_dropout, contract, path)
    checks.check_generation(config, contract, path)
    checks.check_stated(config, contract, path)
    checks.check_probability_columns(config, contract, path)
    return model


@dataclass(frozen=True)
class Sources:
    """Where models, metadata and data come from once the config's defaults and route are applied."""

    model_files: list[Path]
    metadata_path: Path | None
    data_path: Path
    route: TrainingRoute | None
    data_named_by: str = "data_path"


def resolve_sources(config: InferConfig, project_root: Path) -> Sources:
    """Model files (globs resolved), the metadata file and data path; load_infer_config ensured each has a source."""
    route = training_route(config, project_root) if config.training_config_path else None
    if config.model_paths:
        files = [resolve_model_path(project_root, p) for p in config.model_paths]
    else:
        assert route is not None
        pattern, fix = route.default_model_path(config.model_type), route.missing_model_fix(config.model_type)
        files = [resolve_model_path(project_root, pattern, fix)]
    stems = [f.stem for f in files]
    colliding = [f.name for f in files if stems.count(f.stem) > 1]
    if colliding:
        raise UserError("model_path", f"models {colliding} would write to the same output folder (same file stem)")
    metadata_path = route.metadata_path if route else None
    if config.preprocessing_data_path:
        metadata_path = metadata_path_of_preprocessing(project_root, config.preprocessing_data_path)
    if config.metadata_config_path:
        metadata_path = project_root / config.metadata_config_path
    if config.data_path:
        return Sources(files, metadata_path, project_root / config.data_path, route)
    assert metadata_path is not None
    split_paths = read_metadata(metadata_path).split_paths
    if not split_paths:
        raise UserError(
            str(metadata_path), "split_paths is empty, so it names no split to infer on; set data_path to the data"
        )
    data_path = project_root / split_paths[-1]
    return Sources(files, metadata_path, data_path, route, f"the last of split_paths in {metadata_path}")


def infer_part(
    model: Model, stored: StoredWindows, config: InferConfig, chooser: Chooser, done: Callable[[float], None]
) -> dict[str, Any]:
    """Output tables of one block of windows; `done` hears of each share of the block's model calls as it ends.

    {"predictions": table, "probabilities/<target>": table} or {"embeddings": table}.
    """
    contract = model.contract
    width = stored.width
    batch = config.inference_batch_size
    if config.autoregressive:
        start, steps = generation_start(width, contract), config.generation_steps or 1
        checks.check_generated_positions(stored, steps)
        inputs, padding = model_inputs(window_arrays(stored), stored.left_pad_lengths, contract, start)
        computed = _shares(len(padding) * steps, done)
        values, probabilities = generate(model, inputs, padding, steps, batch, chooser, computed)
        rows = label_rows(stored, start, width + np.arange(steps)[None, :], inside_data_only=False)
        return generative_tables(rows, values, probabilities, contract, config.decode_categories)
    starts = view_starts(width, contract, config.window_stride)
    inputs, padding = model_inputs(window_arrays(stored), stored.left_pad_lengths, contract, starts)
    computed = _shares(len(padding), done)
    positions = contract["prediction_length"]
    decoded_inputs = starts[:, None] + contract["context_length"] - positions + np.arange(positions)
    if config.model_type == "embedding":
        rows = label_rows(stored, starts, decoded_inputs, inside_data_only=True)
        embeddings = run_batched(model, inputs, padding, batch, computed)["embedding"]
        return {"embeddings": embeddings_table(rows, embeddings)}
    rows = label_rows(stored, starts, decoded_inputs + contract["target_offset"], inside_data_only=True)
    values, probabilities = chooser(run_batched(model, inputs, padding, batch, computed))
    return generative_tables(rows, values, probabilities, contract, config.decode_categories)


def _shares(total_rows: int, done: Callable[[float], None]) -> Callable[[int], None]:
    """Model rows computed, as shares of the `total_rows` a block needs."""
    return lambda rows: done(rows / max(total_rows, 1))


class _WindowsDone:
    """Inference progress in windows, moved by each share of a block's model calls as it ends."""

    def __init__(self, progress: Progress):
        self.progress, self.windows, self.shown = progress, 0.0, 0

    def block(self, first: int, end: int) -> Callable[[float], None]:
        """Windows first..end-1: a share of their model calls moves the count by that share of them."""

        def done(share: float) -> None:
            self.windows = min(self.windows + share * (end - first), end)
            self._show(int(self.windows))

        return done

    def block_done(self, end: int) -> None:
        self.windows = float(end)
        self._show(end)

    def _show(self, windows: int) -> None:
        if windows > self.shown:
            self.progress.advance(windows - self.shown)
            self.shown = windows


def infer_model(
    model: Model,
    model_file: Path,
    split: StoredSplit,
    check: Callable[[StoredWindows], None],
    config: InferConfig,
    project_root: Path,
) -> list[Path]:
    """Predict every window with one model, reading the split a part at a time and `check`ing each part first.

    Writes part-NNN files of WINDOWS_PER_PART windows each under outputs/<kind>/<model>/, all of them or, on an
    error or interruption, none (the previous outputs stay).
    """
    contract = model.contract
    model.reseed(config.seed)
    chooser = Chooser(
        contract,
        tuple(config.sample_from_distribution_columns or ()),
        np.random.default_rng(config.seed),
        config.output_probabilities,
    )
    outputs = project_root / "outputs"
    staged = StagedParts(outputs, model_file.stem)
    progress = Progress(f"infer {model_file.name}", len(split), unit="windows")
    windows_done = _WindowsDone(progress)
    try:
        try:
            for number, part in enumerate(split.parts(WINDOWS_PER_PART)):
                check(part)
                start = number * WINDOWS_PER_PART
                done = windows_done.block(start, start + len(part))
                for name, table in infer_part(model, part, config, chooser, done).items():
                    kind, _, target = name.partition("/")
                    path = staged.path(kind, target, f"part-{number:03d}.{config.write_format}")
                    write_table(table, path, config.write_format)
                windows_done.block_done(start + len(part))
        except OSError as error:
            raise _output_error(error, outputs, model_file, "the previous outputs are unchanged") from None
        with staged.placing_alone():
            try:
                staged.check_placeable()
                written = staged.place()
            except OSError as error:
                raise _output_error(error, outputs, model_file, "the previous outputs are unchanged") from None
    finally:
        staged.discard()
    progress.close()
    written_folders = {path.parent for path in written}
    for kind in OUTPUT_KINDS:
        earlier = outputs / kind / model_file.stem
        if kind not in staged.stages and earlier.is_dir() and any(earlier.rglob("part-*")):
            print(f"note: {earlier} holds an earlier run's {kind}; this run wrote none, so they are not this run's")
        elif kind in staged.stages:
            for target in sorted(p for p in earlier.iterdir() if p.is_dir() and p not in written_folders):
                if any(target.glob("part-*")):
                    print(f"note: {target} holds an earlier run's {kind} of a target this run does not predict")
    return written


def _output_error(error: OSError, outputs: Path, model_file: Path, state: str) -> UserError:
    """The error named by the file it concerns (of a move, the final one), unless that is a staged one (a hidden temp
    under outputs/)."""
    named = [Path(name) for name in (error.filename2, error.filename) if name]
    where = next((path for path in named if not _is_staged(path)), outputs)
    return UserError(str(where), f"cannot write the outputs of {model_file.name} ({os_problem(error)}); {state}")


def _is_staged(path: Path) -> bool:
    return any(part.startswith(".") and part.endswith(".tmp") for part in path.parts)


def run_inference(
    config_path: Path,
    data_path: str | None = None,
    model_path: str | None = None,
    seed: int | None = None,
    randomize: bool = False,
) -> list[Path]:
    """Run every configured model over the configured split and write its outputs; returns the files written."""
    config = load_infer_config(config_path, data_path=data_path, model_path=model_path, seed=seed, randomize=randomize)
    if randomize:
        print(f"seed {config.seed} (drawn by --randomize)")
    for line in notices(config):
        print(line)
    project_root = (Path.cwd() / config.project_root).resolve()
    sources = resolve_sources(config, project_root)
    models = [open_model(f, config, sources.route) for f in sources.model_files]
    contracts = [(f, m.contract) for f, m in zip(sources.model_files, models)]
    checks.check_compatible(contracts)
    for model_file, contract in contracts:
        kinds = {contract["columns"][target]["kind"] for target in contract["target_columns"]}
        if config.output_probabilities and config.model_type == "generative" and "categorical" not in kinds:
            print(f"note: output_probabilities: {model_file.name} has no categorical target, so no probabilities")
    described = []  # (metadata, its file): the configured one, and a shard folder's own
    if sources.metadata_path:
        metadata = read_metadata(sources.metadata_path)
        described.append((metadata, sources.metadata_path))
        check_same_meanings(sources.data_path, metadata, sources.metadata_path)
    if sources.data_path.is_dir():
        described.append((folder_meanings(sources.data_path), sources.data_path / FOLDER_METADATA))
    for model_file, contract in contracts:
        if sources.route:
            checks.check_train_values(sources.route.expected, contract, model_file, sources.route.source)
        for metadata, path in described:
            checks.check_metadata(metadata, path, contract, model_file)
        checks.check_split_meanings(sources.data_path, contract, model_file)
    started = time.perf_counter()
    split = open_split(sources.data_path, contracts[0][1], config.read_format, sources.data_named_by)
    for _, contract in contracts:
        checks.check_generation_fits(config, len(split), WINDOWS_PER_PART, contract)
    lengths = ()
    if sources.metadata_path and not records_these_meanings(sources.data_path, metadata):
        lengths = (metadata.window_length, *metadata.window_lengths)  # else other windows of the same meanings

    def check(part: StoredWindows) -> None:
        if lengths:
            check_window_length(part, sources.data_path, lengths, sources.metadata_path)
        for model_file, contract in contracts:
            checks.check_stored_values(part, sources.data_path, contract, model_file)

    written = []
    for index, (model_file, model) in enumerate(zip(sources.model_files, models)):
        checked_before = index > 0  # the first model's pass checked every part against every contract
        files = infer_model(model, model_file, split, (lambda part: None) if checked_before else check, config,
                            project_root)  # fmt: skip
        written += files
        elapsed = time.perf_counter() - started
        windows_per_second = len(split) / max(elapsed, 1e-9)
        print(f"{model_file.name}: {len(split)} windows -> {files[0].parent} ({windows_per_second:,.0f} windows/s)")
        started = time.perf_counter()
    return written
