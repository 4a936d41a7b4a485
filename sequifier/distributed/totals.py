"""Loss totals summed over ranks, so that every metric equals the single-process value on the same data."""

from __future__ import annotations

from dataclasses import fields

import torch

from sequifier.distributed.ranks import Ranks
from sequifier.training.evaluation import Totals

FIELDS = tuple(field.name for field in fields(Totals))
COUNTED = tuple(field.name for field in fields(Totals) if field.type == "dict[str, int]")  # summed as whole numbers


def summed_totals(totals: Totals, ranks: Ranks) -> Totals:
    """`totals` of every rank added up (every rank holds the same keys in the same order: the same parts' targets)."""
    if not ranks.joined:
        return totals
    keys = [(field, key) for field in FIELDS for key in getattr(totals, field)]
    values = torch.tensor([float(getattr(totals, field)[key]) for field, key in keys], dtype=torch.float64)
    summed = ranks.sum(values).tolist()
    result = Totals()
    for (field, key), value in zip(keys, summed):
        getattr(result, field)[key] = int(round(value)) if field in COUNTED else value
    return result
