"""The training and validation data of every part of a run, as tensors and model views."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from sequifier.config.resolve import PartSpec, RunSpec
from sequifier.data.stored import load_split
from sequifier.data.views import ViewShape, WindowTensors, to_tensors, training_views


@dataclass(frozen=True)
class SplitData:
    """One split of one part: its windows and the views that train or evaluate on them."""

    windows: WindowTensors
    window_index: Tensor
    end_slot: Tensor

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


def load_parts(spec: RunSpec) -> dict[tuple[str, str], PartData]:
    """(dataset, part) -> its data, loading only the columns its interface reads or predicts."""
    loaded = {}
    for part in spec.parts:
        interface_name = spec.config.dataset_training[part.dataset].model_interface
        interface = spec.config.model.interfaces[interface_name]
        columns = sorted(set(interface.input_columns) | set(interface.target_columns))
        categorical = {n for n, c in spec.columns[interface_name].items() if c.kind == "categorical"}
        shape = view_shape(spec, interface_name)
        train = _split(part.train_path, columns, categorical, shape)
        validation = _split(part.validation_path, columns, categorical, shape) if part.validation_path else None
        loaded[(part.dataset, part.part)] = PartData(part, interface_name, train, validation)
    return loaded


def _split(path: Path, columns: list[str], categorical: set[str], shape: ViewShape) -> SplitData:
    windows = to_tensors(load_split(path, columns, categorical), categorical)
    window_index, end_slot = training_views(windows, shape)
    return SplitData(windows, window_index, end_slot)


def shuffled_batches(split: SplitData, batch_size: int, seed: int) -> list[Tensor]:
    """The split's view indices in a seeded random order, cut into batches (the last may be short)."""
    order = torch.randperm(len(split), generator=torch.Generator().manual_seed(seed))
    return list(order.split(batch_size))
