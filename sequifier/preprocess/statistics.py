"""Normalization statistics of a real column from its moments (moment_tree sums them over the sequences)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sequifier.config.errors import UserError
from sequifier.data.metadata import NORMALIZATION_EPSILON

SQUEEZED_BELOW = 100 * NORMALIZATION_EPSILON  # a std where the epsilon shrinks normalized values by 1% or more


@dataclass(frozen=True)
class Moments:
    """Count, mean, sum of squared deviations, smallest and largest of some values."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")


def statistics_of(name: str, moments: Moments) -> dict[str, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single value); both must be finite."""
    if moments.count == 0:
        raise UserError(name, "no values in split 0 to fit normalization on (set normalize_on_all_data: true)")
    with np.errstate(over="ignore", invalid="ignore"):
        std = float(np.sqrt(moments.m2 / (moments.count - 1))) if moments.count > 1 else 0.0
    if not (np.isfinite(moments.mean) and np.isfinite(std)):
        raise UserError(
            name,
            f"normalization overflows (mean {moments.mean}, std {std}): the values are too large for float64 "
            "arithmetic (the squared deviations from the mean pass ±1e308 for values beyond about ±1e150, "
            "or the file is corrupted); rescale the column or list it in categorical_columns",
        )
    return {"mean": moments.mean, "std": std}


def squeeze_warning(name: str, moments: Moments, std: float) -> str | None:
    """A warning when values that differ have so small a spread that normalization's epsilon squeezes them to 0."""
    if moments.high <= moments.low or std >= SQUEEZED_BELOW:
        return None
    return (
        f"warning: {name}: its values lie within {moments.high - moments.low:.3g} of each other (std {std:.3g}), so "
        f"normalization, (x - mean) / (std + {NORMALIZATION_EPSILON:g}), squeezes them toward 0; multiply the column "
        "by a large constant before preprocessing (unnormalized, values this close may also be one float32 value "
        "in training)"
    )


def constant_fit_warning(name: str, moments: Moments, span: tuple[float, float]) -> str | None:
    """A warning when the fitted values are all one value while other rows differ from it: normalization divides
    their differences by the epsilon alone."""
    low, high = span
    if moments.count == 0 or moments.high > moments.low or (low == moments.low and high == moments.high):
        return None
    farthest = max(abs(low - moments.mean), abs(high - moments.mean))
    return (
        f"warning: {name}: the values normalization is fitted on are all {moments.mean:g}, while other splits hold "
        f"values from {low:g} to {high:g}; (x - mean) / (std + {NORMALIZATION_EPSILON:g}) stores them up to "
        f"{farthest / NORMALIZATION_EPSILON:.3g} in size; set normalize_on_all_data: true, or leave the column out"
    )
