"""Composite ingestion: named branches over column subsets, merged into one vector per time step.

A composite node adds no temporal positions (its leaves hold the per-feature ones) and applies
no dropout of its own: a `dropout` on a composite node is accepted and ignored, as in sequifier 3.x.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from sequifier.model.parameters import tag


class BranchMerge(nn.Module):
    """Projects each branch to `output_dim` (when its width differs) and adds them, weighted for gated and attention.

    sum: plain addition; gated: softmax weights from a linear gate over all projected branches;
    attention: softmax over each projected branch's score against one learned query vector (a
    free parameter, as in sequifier 3.x).
    """

    def __init__(self, widths: dict[str, int], merge: str, output_dim: int):
        super().__init__()
        self.merge_type = merge
        self.projections = nn.ModuleDict(
            {
                name: tag(nn.Linear(width, output_dim), "merge.projection") if width != output_dim else nn.Identity()
                for name, width in widths.items()
            }
        )
        if merge == "gated":
            self.gate = tag(nn.Linear(len(widths) * output_dim, len(widths)), "merge.gate")
        elif merge == "attention":
            self.query = nn.Parameter(torch.zeros(output_dim))

    def forward(self, outputs: dict[str, Tensor]) -> Tensor:
        projected = torch.stack([self.projections[name](out) for name, out in outputs.items()], dim=-2)
        if self.merge_type == "sum":
            return projected.sum(dim=-2)
        if self.merge_type == "gated":
            scores = self.gate(projected.flatten(start_dim=-2))
        else:
            scores = projected @ self.query / math.sqrt(self.query.numel())
        return (scores.softmax(dim=-1).unsqueeze(-1) * projected).sum(dim=-2)


class CompositeIngestion(nn.Module):
    """Runs every branch on the same inputs and merges their outputs to `output_dim`.

    concat: concatenate, then project when the summed width differs; sum, gated, attention: see BranchMerge.
    """

    def __init__(self, branches: dict[str, nn.Module], widths: dict[str, int], merge: str, output_dim: int):
        super().__init__()
        self.merge_type = merge
        self.branches = nn.ModuleDict(branches)
        if merge == "concat":
            total = sum(widths.values())
            self.merge: nn.Module = (
                tag(nn.Linear(total, output_dim), "merge.projection") if total != output_dim else nn.Identity()
            )
        else:
            self.merge = BranchMerge(widths, merge, output_dim)

    def forward(self, inputs: dict[str, Tensor]) -> Tensor:
        outputs = {name: branch(inputs) for name, branch in self.branches.items()}
        if self.merge_type == "concat":
            return self.merge(torch.cat(list(outputs.values()), dim=-1))
        return self.merge(outputs)
