"""Which process of a training job this is, and the few collectives training needs across processes.

A single-process run is rank 0 of 1 and every collective is the identity, so the engine has one code path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    collective_device: str = "cpu"  # where tensors meet for collectives: cuda:<local_rank> under nccl

    @property
    def is_main(self) -> bool:
        """Rank 0 writes logs, metric files, checkpoints and exports; the other ranks write nothing."""
        return self.rank == 0

    @property
    def joined(self) -> bool:
        """Whether a process group is up (a distributed run, even of one process)."""
        return dist.is_available() and dist.is_initialized()

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """Elementwise sum over ranks (the input is not changed)."""
        return self._reduced(values, dist.ReduceOp.SUM)

    def max(self, values: torch.Tensor) -> torch.Tensor:
        return self._reduced(values, dist.ReduceOp.MAX)

    def _reduced(self, values: torch.Tensor, op: dist.ReduceOp) -> torch.Tensor:
        if not self.joined:
            return values
        reduced = values.detach().to(self.collective_device, copy=True)
        dist.all_reduce(reduced, op=op)
        return reduced.to(values.device)

    def gather(self, value: Any) -> list[Any]:
        """Every rank's `value`, in rank order, on every rank."""
        if not self.joined:
            return [value]
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, value)
        return gathered


SINGLE = Ranks()
