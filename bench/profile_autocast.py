"""Where a training step of the seed-shaped model spends its CPU time in float32 and under bf16 autocast.

    .venv/bin/python bench/profile_autocast.py [--steps 10] [--rows 12] [--batch-size 64] [--context 128]
        [--dim 128] [--layers 2] [--ffn 512] [--no-profile]

The step of `bench/train_throughput.py` (forward, loss, backward, AdamW; 8 heads, dropout 0.1), after
warm-up steps, once per mode: the step time of `--steps` plain steps, then (unless --no-profile) the same
number profiled with torch.profiler: the operators with the most self CPU time and the share of the
step that goes to dtype casts (aten::to, _to_copy, copy_).
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch
from torch.profiler import ProfilerActivity, profile
from train_against_reference import CONTEXT
from train_throughput import N_CLASSES, seed_network

from sequifier.training.losses import TargetLosses

CASTS = ("aten::to", "aten::_to_copy", "aten::copy_")


def training_step(args: argparse.Namespace):
    torch.manual_seed(0)
    batch_size, context = args.batch_size, args.context
    network, targets, class_ids = seed_network(args.dim, args.layers, 8, args.ffn, context)
    losses = TargetLosses(
        targets, {"event": "CrossEntropyLoss"}, {}, {k: torch.tensor(v) for k, v in class_ids.items()}
    )
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3)
    inputs = {"event": torch.randint(3, N_CLASSES, (batch_size, context))}
    labels = {"event": torch.randint(3, N_CLASSES, (batch_size, context))}
    valid = torch.ones(batch_size, context, dtype=torch.bool)

    def step(autocast: bool) -> None:
        scope = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
        with scope:
            outputs = network("default", inputs, None)
            sums = losses.sums({k: v.float() for k, v in outputs.items()}, labels, valid)
            loss = losses.aggregate({k: total / count for k, (total, count) in sums.items()})
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--context", type=int, default=CONTEXT)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--ffn", type=int, default=512)
    parser.add_argument("--no-profile", action="store_true", help="time the steps only")
    args = parser.parse_args()
    step = training_step(args)
    for name, autocast in (("float32", False), ("bf16 autocast", True)):
        for _ in range(3):
            step(autocast)
        started = time.perf_counter()
        for _ in range(args.steps):
            step(autocast)
        per_step = (time.perf_counter() - started) / args.steps
        tokens = args.batch_size * args.context / per_step
        print(f"\n== {name}: {per_step * 1000:.0f} ms/step, {tokens:,.0f} tokens/s")
        if args.no_profile:
            continue
        with profile(activities=[ProfilerActivity.CPU]) as profiler:
            for _ in range(args.steps):
                step(autocast)
        events = profiler.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        casts = sum(e.self_cpu_time_total for e in events if e.key in CASTS)
        print(f"profiled: casts {100 * casts / total:.1f}% of self CPU")
        print(events.table(sort_by="self_cpu_time_total", row_limit=args.rows, max_name_column_width=40))


if __name__ == "__main__":
    main()
