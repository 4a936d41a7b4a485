"""Normalization statistics: per-group moments of real columns, merged exactly enough to give the 3.x mean and std."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sequifier.config.errors import UserError


@dataclass(frozen=True)
class Moments:
    """Count, mean and sum of squared deviations of some values."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @staticmethod
    def of(values: np.ndarray) -> "Moments":
        if values.size == 0:
            return Moments()
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused by statistics_of, naming the column
            mean = float(values.mean())
            return Moments(int(values.size), mean, float(np.square(values - mean).sum()))

    def merged(self, other: "Moments") -> "Moments":
        """Moments of both sets of values together (Chan et al.'s pairwise update)."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * other.count / count
        return Moments(count, mean, self.m2 + other.m2 + delta * delta * self.count * other.count / count)


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
