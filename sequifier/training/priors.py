"""Decoder priors: how each target is distributed in the training data, predicted where there is no evidence.

A position that has seen only left padding (the first item of a short sequence, or of a split
stored apart from earlier ones) has no context to predict from. Its best guess is the target's
distribution over the training data: smoothed log class frequencies for a categorical target
(every predictable class keeps a little probability), the mean for a real one.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sequifier.data.datasets import PartData
from sequifier.data.views import WindowTensors, widened
from sequifier.distributed.ranks import SINGLE, Ranks
from sequifier.model.network import SequifierNetwork


def fit_priors(network: SequifierNetwork, parts: dict[tuple[str, str], PartData], ranks: Ranks = SINGLE) -> None:
    """Set every decoder's priors from the in-split items of the training windows of the parts it trains on.

    In a distributed run the counts of every rank's windows are summed, so all ranks fit the same priors.
    """
    for interface_name, interface in network.interfaces.items():
        windows = [part.train.windows for part in parts.values() if part.interface == interface_name]
        if not windows:
            continue
        decoder = interface.decoder
        for target in decoder.target_names:
            values = torch.cat([in_split_values(w, target) for w in windows])
            prior = decoder.prior(target)
            if target in decoder.real_targets:
                total, count = ranks.sum(torch.tensor([float(values.double().sum()), float(values.numel())]))
                prior.fill_(float(total / count) if count else 0.0)
            else:
                counts = ranks.sum(class_counts(values, decoder.class_ids(target)))
                prior.copy_(log_frequencies(counts))


def in_split_values(windows: WindowTensors, column: str) -> Tensor:
    """The values of `column` at every slot that holds an item of the window's split."""
    slots = torch.arange(windows.width)[None, :]
    inside = (slots >= windows.first_target_slot[:, None]) & (slots < windows.end_target_slot[:, None])
    return widened(windows.columns[column][inside])


def class_counts(ids: Tensor, class_ids: Tensor) -> Tensor:
    """How often each predictable class occurs in `ids`, in output order (float64); other ids are ignored."""
    largest = max(int(class_ids.max()), int(ids.max()) if ids.numel() else 0)
    lookup = torch.full((largest + 1,), -1, dtype=torch.int64)
    lookup[class_ids] = torch.arange(len(class_ids))
    index = lookup[ids]
    return torch.bincount(index[index >= 0], minlength=len(class_ids)).to(torch.float64)


def log_frequencies(counts: Tensor) -> Tensor:
    """log((count + 1) / (total + classes)) per class."""
    return torch.log((counts + 1) / (counts.sum() + len(counts))).to(torch.float32)
