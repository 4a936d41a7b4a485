"""The training and validation data of every part of a run, as tensors and model views."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from sequifier.config.resolve import PartSpec, RunSpec
from sequifier.data.stored import load_split, split_size
from sequifier.data.views import ViewShape, WindowTensors, to_tensors, training_views
from sequifier.distributed.ranks import SINGLE, Ranks
from sequifier.distributed.sharding import check_enough_windows, padded_views, rank_range


@dataclass(frozen=True)
class SplitData:
    """One split of one part: its windows and the views that train or evaluate on them.

    `view_valid` marks the real views when a distributed rank is padded with repeats (None: all are real).
    """

    windows: WindowTensors
    window_index: Tensor
    end_slot: Tensor
    view_valid: Tensor | None = None

    def __len__(self) -> int:
        return len(self.window_index)


@dataclass(frozen=True)
class PartData:
    spec: PartSpec
    interface: str
    train: SplitData
    validation: SplitData | None


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
        columns = sorted(set(interface.input_columns) | set(interface.target_columns))
        categorical = {n for n, c in spec.columns[interface_name].items() if c.kind == "categorical"}
        shape = view_shape(spec, interface_name)
        where = f"dataset_training.{part.dataset}.parts.{part.part}"
        train = _split(part.train_path, columns, categorical, shape, ranks, where)
        validation = (
            _split(part.validation_path, columns, categorical, shape, ranks, where) if part.validation_path else None
        )
        loaded[(part.dataset, part.part)] = PartData(part, interface_name, train, validation)
    return loaded


def _split(
    path: Path, columns: list[str], categorical: set[str], shape: ViewShape, ranks: Ranks, where: str
) -> SplitData:
    window_range = None
    if ranks.joined:
        total = split_size(path)
        check_enough_windows(total, ranks, f"{where}: {path.name}")
        window_range = rank_range(total, ranks)
    windows = to_tensors(load_split(path, columns, categorical, window_range), categorical)
    window_index, end_slot = training_views(windows, shape)
    return SplitData(windows, *padded_views(window_index, end_slot, ranks))


def shuffled_batches(split: SplitData, batch_size: int, seed: int) -> list[Tensor]:
    """The split's view indices in a seeded random order, cut into batches (the last may be short)."""
    order = torch.randperm(len(split), generator=torch.Generator().manual_seed(seed))
    return list(order.split(batch_size))
