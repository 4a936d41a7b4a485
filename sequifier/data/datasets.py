"""The training and validation data of every part of a run, as tensors and model views."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
from torch import Tensor

from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec
from sequifier.config.resolve import PartSpec, RunSpec
from sequifier.data.fingerprint import check_same_meanings
from sequifier.data.set_lock import reading_whole, swap_cut_short
from sequifier.data.stored import file_window_counts, load_split
from sequifier.data.stored_windows import StoredWindows, check_window_length
from sequifier.data.views import Batch, ViewShape, WindowTensors, gather_batch, to_tensors, training_views
from sequifier.distributed.ranks import SINGLE, Ranks
from sequifier.distributed.sharding import check_enough_windows, padded_views, rank_range

ID_DTYPES = (np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))


@dataclass(frozen=True)
class SplitData:
    """One split of one part: its windows and the views that train or evaluate on them.

    `shuffle_blocks` are the numbers of consecutive views shuffled together: all views at once, or the
    views of each stored file in reading order (`file_order: name`). `view_valid` marks the real views
    when a distributed rank is padded with repeats (None: all are real); the repeats are the last block.
    """

    windows: WindowTensors
    window_index: Tensor
    end_slot: Tensor
    shuffle_blocks: tuple[int, ...]
    view_valid: Tensor | None = None

    def __len__(self) -> int:
        return len(self.window_index)

    def gathered(
        self, chosen: Tensor | slice, shape: ViewShape, input_columns: tuple[str, ...], target_columns: tuple[str, ...]
    ) -> Batch:
        """The views `chosen`, gathered; targets of padding repeats are not counted."""
        valid = self.view_valid[chosen] if self.view_valid is not None else None
        return gather_batch(
            self.windows,
            self.window_index[chosen],
            self.end_slot[chosen],
            shape,
            input_columns,
            target_columns,
            valid,
        )


@dataclass(frozen=True)
class PartData:
    spec: PartSpec
    interface: str
    shape: ViewShape
    input_columns: tuple[str, ...]
    target_columns: tuple[str, ...]
    train: SplitData
    validation: SplitData | None

    def training_batch(self, chosen: Tensor) -> Batch:
        """The training views `chosen` (indices into the train split's views), gathered."""
        return self.train.gathered(chosen, self.shape, self.input_columns, self.target_columns)


def view_shape(spec: RunSpec, interface: str) -> ViewShape:
    training = spec.config.global_training
    support = spec.config.model.interfaces[interface].decoder.support
    return ViewShape(training.context_length, training.target_offset, training.window_stride, support)


def load_parts(spec: RunSpec, ranks: Ranks = SINGLE) -> dict[tuple[str, str], PartData]:
    """(dataset, part) -> its data (this rank's share), loading only the columns its interface reads or predicts."""
    loaded = {}
    for part in spec.parts:
        interface_name = spec.config.dataset_training[part.dataset].model_interface
        interface = spec.config.model.interfaces[interface_name]
        file_order = spec.config.dataset_training[part.dataset].parts[part.part].file_order
        columns = sorted(set(interface.input_columns) | set(interface.target_columns))
        dtypes = resident_dtypes(spec.columns[interface_name], columns)
        shape = view_shape(spec, interface_name)
        where = f"dataset_training.{part.dataset}.parts.{part.part}"
        classes = {name: spec.columns[interface_name][name].n_classes for name in columns}
        for path in (part.train_path, part.validation_path):
            if path is not None:
                check_same_meanings(path, part.metadata, part.metadata_path)
        train = _split(part.train_path, dtypes, classes, shape, ranks, where, part, file_order)
        validation = None
        if part.validation_path:
            validation = _split(part.validation_path, dtypes, classes, shape, ranks, where, part)
        loaded[(part.dataset, part.part)] = PartData(
            part,
            interface_name,
            shape,
            tuple(interface.input_columns),
            tuple(interface.target_columns),
            train,
            validation,
        )
    return loaded


@contextmanager
def splits_held_whole(spec: RunSpec, note: Callable[[str], None]) -> Iterator[None]:
    """While active, no preprocess run swaps outputs into the folders of the run's splits. A set there that a killed
    preprocess run left half swapped is refused."""
    splits = [path for part in spec.parts for path in (part.train_path, part.validation_path) if path is not None]
    folders = {path.parent for path in splits}
    with reading_whole(folders, note):
        for folder in sorted(folders):
            record = swap_cut_short(folder)
            if record is not None:
                raise UserError(
                    str(folder),
                    f"holds a mix of two preprocess runs' outputs: the run whose record is {record} was killed "
                    "while it swapped its outputs in; run `sequifier preprocess` again (it first puts the earlier "
                    "outputs back), then train",
                )
        yield


def resident_dtypes(specs: dict[str, ColumnSpec], columns: list[str]) -> dict[str, np.dtype]:
    """Each column's dtype while training: ids in the smallest of int16/int32/int64 that holds the vocabulary,
    reals float32."""
    return {
        name: next(t for t in ID_DTYPES if np.iinfo(t).max >= specs[name].n_classes)
        if specs[name].kind == "categorical"
        else np.dtype(np.float32)
        for name in columns
    }


def _split(
    path: Path,
    dtypes: dict[str, np.dtype],
    classes: dict[str, int],
    shape: ViewShape,
    ranks: Ranks,
    where: str,
    part: PartSpec,
    file_order: str = "shuffled",
) -> SplitData:
    """The split's windows (this rank's share of them in a distributed run) and their views."""
    window_range = None
    if ranks.joined:
        total = sum(file_window_counts(path, file_order))
        check_enough_windows(total, ranks, f"{where}: {path.name}")
        window_range = rank_range(total, ranks)
    categorical = {name for name, dtype in dtypes.items() if np.issubdtype(dtype, np.integer)}
    stored = load_split(path, list(dtypes), categorical, file_order, window_range, dtypes)
    check_window_length(stored, path, (part.metadata.window_length, *part.metadata.window_lengths), part.metadata_path)
    check_training_windows(stored, path, classes, shape)
    windows = to_tensors(stored, categorical)
    window_index, end_slot = training_views(windows, shape)
    if not len(window_index) and not ranks.joined:
        raise UserError(
            str(path), f"holds no views to train or validate on ({len(stored)} windows); {where} needs some"
        )
    blocks = (len(window_index),)
    if file_order == "name":
        counts = file_window_counts(path, file_order)
        if window_range is not None:
            counts = _counts_in_range(counts, window_range)
        file_ends = torch.tensor(counts, dtype=torch.int64).cumsum(0)
        view_ends = torch.searchsorted(window_index, file_ends, side="left")
        blocks = tuple(torch.diff(view_ends, prepend=torch.zeros(1, dtype=torch.int64)).tolist()) or blocks
    real = len(window_index)
    window_index, end_slot, view_valid = padded_views(window_index, end_slot, ranks)
    if len(window_index) > real:
        blocks = (*blocks, len(window_index) - real)
    return SplitData(windows, window_index, end_slot, blocks, view_valid)


def check_training_windows(stored: StoredWindows, path: Path, classes: dict[str, int], shape: ViewShape) -> None:
    """The stored windows are wide enough for the views, and their ids are classes of the metadata."""
    width = stored.width
    if not len(stored) or width is None:
        return
    needed = shape.context_length + shape.target_offset
    if width < needed:
        raise UserError(
            str(path),
            f"holds windows of {width} items, but context_length {shape.context_length} + target_offset "
            f"{shape.target_offset} needs {needed}: preprocess with a window_length of at least {needed}",
        )
    for name, values in stored.columns.items():
        if not classes.get(name) and np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
            raise UserError(name, f"{path} holds NaN or infinite values; real columns must be finite")
        if name in classes and classes[name] and values.size:
            smallest, largest = int(values.min()), int(values.max())
            if smallest < 0 or largest >= classes[name]:
                raise UserError(
                    name,
                    f"{path} holds the id {smallest if smallest < 0 else largest}, outside the "
                    f"{classes[name]} classes its metadata gives the column (ids 0 to {classes[name] - 1})",
                )


def _counts_in_range(counts: list[int], window_range: tuple[int, int]) -> list[int]:
    """How many of each file's windows fall into `window_range` (files in reading order)."""
    start, stop = window_range
    kept, first = [], 0
    for count in counts:
        kept.append(max(0, min(stop, first + count) - max(start, first)))
        first += count
    return kept


def shuffled_batches(split: SplitData, batch_size: int, seed: int) -> list[Tensor]:
    """The split's view indices in a seeded random order within each shuffle block, blocks one after another, cut
    into batches (a batch may span two blocks; the last may be short)."""
    generator = torch.Generator().manual_seed(seed)
    starts = [0, *torch.tensor(split.shuffle_blocks).cumsum(0).tolist()[:-1]]
    order = torch.cat(
        [start + torch.randperm(size, generator=generator) for start, size in zip(starts, split.shuffle_blocks)]
    )
    return list(order.split(batch_size))
