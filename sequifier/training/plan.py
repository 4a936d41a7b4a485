"""Training plans: the order in which a phase epoch visits the batches of its sources.

A source is a dataset (all its parts, in declaration order) or one `dataset.part`. A
sequential phase exhausts each source in listed order. An interleaved phase repeatedly
selects a source that still has batches, round robin or weighted at random, and takes at
most `batches_per_selection` batches from it; every source is exhausted exactly once per
epoch, so weights change order and burst frequency, never the amount of data.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Callable

from sequifier.config.schema import PhaseConfig, TrainConfig


@dataclass(frozen=True)
class PlannedBatch:
    """The `batch`-th batch of one part's shuffled views, reached through `source`."""

    source: str
    dataset: str
    part: str
    batch: int


def stream_seed(seed: int, *labels: object) -> int:
    """A seed for one named random stream of the run (shuffles, selections), stable across runs."""
    text = "\x1f".join(str(x) for x in (seed, *labels))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") & (2**63 - 1)


def source_parts(config: TrainConfig, source: str) -> list[tuple[str, str]]:
    """(dataset, part) pairs a source iterates, in declaration order."""
    dataset, _, part = source.partition(".")
    if part:
        return [(dataset, part)]
    return [(dataset, name) for name in config.dataset_training[dataset].parts]


def phase_epoch(
    config: TrainConfig, phase: PhaseConfig, batch_counts: dict[tuple[str, str], int], seed: int
) -> list[PlannedBatch]:
    """Every batch of one epoch of `phase`, in training order."""
    queues = [
        [
            PlannedBatch(s.source, d, p, b)
            for d, p in source_parts(config, s.source)
            for b in range(batch_counts[(d, p)])
        ]
        for s in phase.sources
    ]
    if phase.mode == "sequential":
        return [batch for queue in queues for batch in queue]
    rng = random.Random(seed)
    positions = [0] * len(queues)
    order: list[PlannedBatch] = []
    turn = 0
    while True:
        open_sources = [i for i, queue in enumerate(queues) if positions[i] < len(queue)]
        if not open_sources:
            return order
        if phase.selection == "round_robin":
            chosen = min(open_sources, key=lambda i: (i - turn) % len(queues))
            turn = chosen + 1
        else:
            chosen = rng.choices(open_sources, weights=[phase.sources[i].weight for i in open_sources])[0]
        take = phase.sources[chosen].batches_per_selection
        order += queues[chosen][positions[chosen] : positions[chosen] + take]
        positions[chosen] += take


def window_ends(schedule: list[PlannedBatch], accumulation_steps: int) -> list[int]:
    """Indices of the batches whose update the plan makes after them: a full accumulation window, the last batch
    before another dataset's, and the epoch's last batch."""
    ends, window = [], 0
    for index, planned in enumerate(schedule):
        window += 1
        last = index + 1 == len(schedule)
        if window == accumulation_steps or last or schedule[index + 1].dataset != planned.dataset:
            ends.append(index)
            window = 0
    return ends


def optimizer_steps(schedule: list[PlannedBatch], accumulation_steps: int) -> int:
    """Updates one epoch's plan makes (snapshots inside a window add updates the plan does not count)."""
    return len(window_ends(schedule, accumulation_steps))


def phase_optimizer_steps(
    config: TrainConfig,
    phase: PhaseConfig,
    batch_counts: dict[tuple[str, str], int],
    accumulation_steps: int,
    epoch_seed: Callable[[int], int],
) -> int:
    """Updates of all epochs of `phase`, holding one epoch's schedule at a time (`epoch_seed(e)` seeds epoch e).

    Only weighted selection orders an epoch's batches differently from the next, which moves the flushes at
    dataset changes when updates accumulate; otherwise every epoch makes the updates of the first.
    """
    steps_of = lambda epoch: optimizer_steps(
        phase_epoch(config, phase, batch_counts, epoch_seed(epoch)), accumulation_steps
    )
    if accumulation_steps == 1 or phase.mode == "sequential" or phase.selection == "round_robin":
        return steps_of(1) * phase.epochs
    return sum(steps_of(epoch) for epoch in range(1, phase.epochs + 1))
