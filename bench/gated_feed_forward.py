"""The gated feed-forward's lean autograd Function against the plain expression, in one process, alternating.

    .venv/bin/python bench/gated_feed_forward.py [--rounds 6] [--steps 10] [--batch-size 64] [--context 128]

Each round times `--steps` training steps (forward, backward, AdamW) of the seed-shaped model with the plain
expression and then with the Function (order alternating between rounds), and counts the distinct storages
that autograd keeps for backward during one step of each. Prints the median wall and CPU ms/step of each, the
saved MiB, and the median of the rounds' function/plain ratios (pairs run back to back, so load shifts cancel).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from unittest import mock

import torch
from train_throughput import saved_bytes, seed_training

import sequifier.model.gated_feed_forward as gated_feed_forward

MODES = ("plain", "function")


def mode_context(mode: str) -> contextlib.AbstractContextManager:
    if mode == "plain":
        return mock.patch.object(gated_feed_forward, "_fuses", lambda up, down: False)
    return contextlib.nullcontext()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    training = seed_training(args.batch_size, args.context)
    forward, step = training.forward, training.step

    saved = {}
    for mode in MODES:
        with mode_context(mode):
            saved[mode] = saved_bytes(forward) / 2**20
            for _ in range(3):
                step()
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    for round_index in range(args.rounds):
        for mode in MODES if round_index % 2 == 0 else reversed(MODES):
            with mode_context(mode):
                started, started_cpu = time.perf_counter(), time.process_time()
                for _ in range(args.steps):
                    step()
                wall[mode].append(1000 * (time.perf_counter() - started) / args.steps)
                cpu[mode].append(1000 * (time.process_time() - started_cpu) / args.steps)
    print(f"seed-shaped model, batch {args.batch_size}, ctx {args.context}, {torch.get_num_threads()} threads")
    for mode in MODES:
        print(
            f"{mode:>8}: {statistics.median(wall[mode]):.1f} ms/step wall, {statistics.median(cpu[mode]):.1f} ms/step "
            f"CPU (medians of {args.rounds} rounds), saved for backward {saved[mode]:.0f} MiB"
        )
    for name, times in (("wall", wall), ("CPU", cpu)):
        ratios = [new / old for old, new in zip(times["plain"], times["function"])]
        print(f"function / plain {name} time, median of the rounds' ratios: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
