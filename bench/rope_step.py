"""Rotary encoding in training: the autograd Function against the plain rotation, alternated in one process.

    .venv/bin/python bench/rope_step.py [--rounds 8] [--steps 3]

Times whole training steps of the seed-shaped model (as bench/train_throughput.py builds it) and the
rotation alone (forward + backward on the strided queries-and-keys view of a qkv projection), switching
variant every round, and counts the bytes autograd saves for backward in one forward of each variant.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from train_throughput import saved_bytes, seed_training

from sequifier.model import positions

BATCH, CONTEXT, DIM, LAYERS, HEADS, FFN = 64, 128, 128, 2, 8, 512
VARIANTS = {"function": positions.records_rotation_backward, "plain": lambda x: False}


def rotation_step() -> Callable[[], None]:
    rotary = positions.RotaryEmbedding(DIM // HEADS, CONTEXT, 10000.0)
    projection = torch.randn(BATCH, CONTEXT, 3 * HEADS, DIM // HEADS, requires_grad=True)
    upstream = torch.randn(BATCH, CONTEXT, 2 * HEADS, DIM // HEADS)

    def step() -> None:
        queries_and_keys = projection[:, :, : 2 * HEADS]
        torch.autograd.grad(rotary(queries_and_keys), queries_and_keys, upstream)

    return step


def milliseconds_per_step(step: Callable[[], None], steps: int) -> tuple[float, float]:
    """Wall and process CPU milliseconds per step (CPU time is less disturbed by other processes)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return 1000 * (time.perf_counter() - wall) / steps, 1000 * (time.process_time() - cpu) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    benches = {
        "training step": seed_training(BATCH, CONTEXT, DIM, LAYERS, HEADS, FFN).step,
        "rotation alone": rotation_step(),
    }
    timings = {(bench, variant): [] for bench in benches for variant in VARIANTS}
    for round_index in range(args.rounds + 1):
        for variant, gate in VARIANTS.items():
            positions.records_rotation_backward = gate
            for bench, step in benches.items():
                steps = args.steps if bench == "training step" else 10 * args.steps
                elapsed = milliseconds_per_step(step, steps)
                if round_index:  # the first round warms up
                    timings[bench, variant].append(elapsed)
    print(f"{torch.get_num_threads()} threads; {args.rounds} alternating rounds; ms per step: median (min)")
    for (bench, variant), values in timings.items():
        walls, cpus = zip(*values)
        print(
            f"{bench:15s} {variant:9s} wall {statistics.median(walls):8.2f} ({min(walls):.2f})"
            f"  cpu {statistics.median(cpus):8.2f} ({min(cpus):.2f})"
        )
    for variant, gate in VARIANTS.items():
        positions.records_rotation_backward = gate
        for bench, step in benches.items():
            print(f"saved for backward, {bench}, {variant}: {saved_bytes(step) / 2**10:,.0f} KiB")


if __name__ == "__main__":
    main()
