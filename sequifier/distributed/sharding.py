"""Which windows each rank trains and validates on, and the repeats that give every rank the same number of views.

Rank r of N takes the contiguous windows [total * r // N, total * (r + 1) // N) of each split, so only the
shards that hold them are read and per-rank memory falls with N. Ranks whose share yields fewer views than the
largest share are padded with repeats of their first views; the repeats are marked invalid, so the loss never
counts them and every real view contributes exactly once per epoch while all ranks take the same steps.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sequifier.config.errors import UserError
from sequifier.config.resolve import RunSpec
from sequifier.data.stored import file_window_counts
from sequifier.distributed.ranks import Ranks


def rank_range(total: int, ranks: Ranks) -> tuple[int, int]:
    return total * ranks.rank // ranks.world_size, total * (ranks.rank + 1) // ranks.world_size


def check_enough_windows(total: int, ranks: Ranks, where: str) -> None:
    if total < ranks.world_size:
        raise UserError(
            where,
            f"holds {total} window{'' if total == 1 else 's'} for {ranks.world_size} processes; every process needs at "
            "least one",
        )


def check_shares(spec: RunSpec, world_size: int) -> None:
    """Before any process starts: every split to be read has a window for each of the `world_size` ranks."""
    for part in spec.parts:
        for path in filter(None, (part.train_path, part.validation_path)):
            total = sum(file_window_counts(path))
            check_enough_windows(
                total, Ranks(0, world_size), f"dataset_training.{part.dataset}.parts.{part.part}: {path.name}"
            )


def padded_views(window_index: Tensor, end_slot: Tensor, ranks: Ranks) -> tuple[Tensor, Tensor, Tensor | None]:
    """The views padded with invalid repeats up to the largest rank's count, and the validity mask (None: all real)."""
    count = len(window_index)
    largest = int(ranks.max(torch.tensor([count]))[0])
    if largest == count:
        return window_index, end_slot, None
    repeats = torch.arange(largest - count) % max(count, 1)
    valid = torch.cat([torch.ones(count, dtype=torch.bool), torch.zeros(largest - count, dtype=torch.bool)])
    return torch.cat([window_index, window_index[repeats]]), torch.cat([end_slot, end_slot[repeats]]), valid
