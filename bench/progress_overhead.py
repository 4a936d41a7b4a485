"""Cost of the live progress display in a training loop: the seed-shaped step of train_throughput.py, timed
without a display, with plain lines (no terminal) and with the bar (a terminal), plus the cost of one update
as a share of a step (the figure that stays stable on a loaded machine, where whole-loop rates vary more).

    .venv/bin/python bench/progress_overhead.py [--steps 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_throughput import seed_training  # noqa: E402

from sequifier.progress import Progress  # noqa: E402

BATCH, CONTEXT = 64, 128


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def display(mode: str, steps: int) -> Progress | None:
    if mode == "off":
        return None
    stream = Terminal() if mode == "bar" else io.StringIO()
    return Progress("epoch 1 (bench)", steps, unit="samples", stream=stream)


def timed_loop(step, mode: str, steps: int) -> float:
    shown = display(mode, steps)
    started = time.perf_counter()
    for number in range(steps):
        step()
        if shown is not None:
            shown.advance(BATCH, number + 1, lambda: "loss 1.0000")
    elapsed = time.perf_counter() - started
    if shown is not None:
        shown.close()
    return steps * BATCH / elapsed


def update_cost(mode: str, calls: int = 200_000) -> float:
    shown = display(mode, calls)
    started = time.perf_counter()
    for number in range(calls):
        shown.advance(BATCH, number + 1, lambda: "loss 1.0000")
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    step = seed_training(BATCH, CONTEXT).step

    for _ in range(3):
        step()
    modes = ("off", "lines", "bar")
    rates = {mode: [] for mode in modes}
    for _ in range(args.repeats):
        for mode in modes:  # interleaved, so drift in machine load hits every mode alike
            rates[mode].append(timed_loop(step, mode, args.steps))
    best = {mode: max(values) for mode, values in rates.items()}
    for mode in modes:
        change = 100 * (best[mode] / best["off"] - 1)
        print(f"{mode:>5}: {best[mode]:,.1f} samples/s (best of {args.repeats}), {change:+.2f}% vs off")
    step_seconds = BATCH / best["off"]
    for mode in ("lines", "bar"):
        cost = update_cost(mode)
        print(f"one update ({mode}): {cost * 1e6:.2f} µs = {100 * cost / step_seconds:.2g}% of a training step")


if __name__ == "__main__":
    main()
