"""Composite ingestion: named branches over column subsets, merged into one vector per time step."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.model.parameters import tag


class CompositeIngestion(nn.Module):
    """Runs every branch on the same inputs and merges their outputs to `output_dim`.

    concat: concatenate, then project when the summed width differs;
    sum: project each branch to `output_dim` when needed, then add.
    """

    def __init__(self, branches: dict[str, nn.Module], widths: dict[str, int], merge: str, output_dim: int):
        super().__init__()
        self.merge_type = merge
        self.branches = nn.ModuleDict(branches)
        if merge == "concat":
            total = sum(widths.values())
            self.merge: nn.Module = nn.Linear(total, output_dim) if total != output_dim else nn.Identity()
        else:
            self.merge = nn.ModuleDict({name: nn.Linear(width, output_dim) if width != output_dim else nn.Identity() for name, width in widths.items()})
        tag(self.merge, "merge")

    def forward(self, inputs: dict[str, Tensor]) -> Tensor:
        outputs = {name: branch(inputs) for name, branch in self.branches.items()}
        if self.merge_type == "concat":
            return self.merge(torch.cat(list(outputs.values()), dim=-1))
        return sum(self.merge[name](out) for name, out in outputs.items())
