"""Running a model over windows: batched calls, choosing categories (argmax or sampled), autoregressive generation."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from sequifier.config.errors import UserError


class Model(Protocol):
    """What inference needs of an artifact (OnnxModel, PtModel).

    Its contract, a call, seeding its dropout, and how many calls may run at once.
    """

    path: Path
    contract: dict[str, Any]
    concurrency: int

    def __call__(self, inputs: dict[str, np.ndarray], left_pad_lengths: np.ndarray) -> dict[str, np.ndarray]: ...

    def reseed(self, seed: int) -> None: ...


def run_batched(
    model: Model,
    inputs: dict[str, np.ndarray],
    padding: np.ndarray,
    batch_size: int,
    computed: Callable[[int], None] = lambda rows: None,
) -> dict[str, np.ndarray]:
    """Model outputs for all windows, `batch_size` windows per call, up to `model.concurrency` calls at once;
    `computed` hears of each call's rows as its outputs arrive, in order."""

    def call(start: int) -> dict[str, np.ndarray]:
        return model({k: v[start : start + batch_size] for k, v in inputs.items()}, padding[start : start + batch_size])

    starts = range(0, len(padding), batch_size)
    concurrent = model.concurrency > 1 and len(starts) > 1
    pool = ThreadPoolExecutor(model.concurrency) if concurrent else None
    batches = []
    try:
        for start, batch in zip(starts, pool.map(call, starts) if pool else map(call, starts)):
            batches.append(batch)
            computed(min(batch_size, len(padding) - start))
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    outputs = {key: np.concatenate([b[key] for b in batches]) for key in batches[0]}
    positions = model.contract["prediction_length"]
    for key, values in outputs.items():
        if values.ndim < 2 or values.shape[1] != positions:
            raise UserError(
                str(model.path),
                f"the model computes {values.shape[1] if values.ndim > 1 else 'no'} positions of {key!r} per view, "
                f"but its execution contract gives prediction_length {positions}; the file is damaged",
            )
        if not np.isfinite(values).all():
            raise UserError(
                str(model.path), f"the model computes NaN or infinite values for {key!r}; its weights are broken"
            )
    return outputs


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@dataclass
class Chooser:
    """Turns model outputs into target values: class ids by argmax, or drawn from the softmax for `sampled` targets.

    Probabilities are returned when `keep_probabilities` (else only computed for sampled targets).
    """

    contract: dict
    sampled: tuple[str, ...]
    rng: np.random.Generator
    keep_probabilities: bool

    def __call__(self, outputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The outputs' values and probabilities.

        (values per target [windows, positions], probabilities per categorical target [windows, positions, classes]).
        """
        values, probabilities = {}, {}
        for target in self.contract["target_columns"]:
            out = outputs[target]
            if self.contract["columns"][target]["kind"] != "categorical":
                values[target] = out
                continue
            if target in self.sampled or self.keep_probabilities:
                probabilities[target] = softmax(out.astype(np.float64))
            if target in self.sampled:
                cumulative = probabilities[target].cumsum(axis=-1)
                draws = self.rng.random(cumulative.shape[:-1])[..., None] * cumulative[..., -1:]
                index = np.minimum((cumulative < draws).sum(axis=-1), cumulative.shape[-1] - 1)
            else:
                index = out.argmax(axis=-1)
            values[target] = np.asarray(self.contract["class_ids"][target])[index]
        return values, probabilities if self.keep_probabilities else {}


def shift_in(
    inputs: dict[str, np.ndarray], padding: np.ndarray, values: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The next context: drop the oldest slot, append `values` ([windows, 1] per input column) as the newest item."""
    shifted = {
        name: np.concatenate([array[:, 1:], values[name].astype(array.dtype)], axis=1) for name, array in inputs.items()
    }
    return shifted, np.maximum(padding - 1, 0)


def generate(
    model: Model,
    inputs: dict[str, np.ndarray],
    padding: np.ndarray,
    steps: int,
    batch_size: int,
    choose: Chooser,
    computed: Callable[[int], None] = lambda rows: None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """`steps` items per window, each prediction fed back as the next input; `computed` as in `run_batched`.

    Returns values [windows, steps] and probabilities [windows, steps, classes].
    """
    values_by_step, probabilities_by_step = [], []
    for _ in range(steps):
        values, probabilities = choose(run_batched(model, inputs, padding, batch_size, computed))
        values_by_step.append(values)
        probabilities_by_step.append(probabilities)
        inputs, padding = shift_in(inputs, padding, values)
    values = {t: np.concatenate([v[t] for v in values_by_step], axis=1) for t in values_by_step[0]}
    probabilities = {t: np.concatenate([p[t] for p in probabilities_by_step], axis=1) for t in probabilities_by_step[0]}
    return values, probabilities
