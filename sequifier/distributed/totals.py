"""Loss totals summed over ranks, so that every metric equals the single-process value on the same data."""

from __future__ import annotations

import torch

from sequifier.distributed.ranks import Ranks
from sequifier.training.evaluation import Totals

FIELDS = ("loss", "baseline", "repeats", "count")


def summed_totals(totals: Totals, ranks: Ranks) -> Totals:
    """`totals` of every rank added up (every rank holds the same keys in the same order: the same parts' targets)."""
    if not ranks.joined:
        return totals
    keys = [(field, key) for field in FIELDS for key in getattr(totals, field)]
    values = torch.tensor([float(getattr(totals, field)[key]) for field, key in keys], dtype=torch.float64)
    summed = ranks.sum(values).tolist()
    result = Totals()
    for (field, key), value in zip(keys, summed):
        getattr(result, field)[key] = int(round(value)) if field in ("repeats", "count") else value
    return result
