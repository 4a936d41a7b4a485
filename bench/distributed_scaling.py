"""Training tokens/s of one process against data-parallel ranks (DDP over gloo on the CPU), seed-shaped model.

    .venv/bin/python bench/distributed_scaling.py [--ranks 2] [--steps 20] [--batch-size 64] [--context 128]

One process trains with every core; each of the N ranks trains batch_size samples per step with cores / N
threads (as `sequifier train` gives spawned workers), so a distributed step covers N times the samples.
Both run the training step sequifier runs (the network, DDP from sequifier.distributed.parallel, AdamW).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from train_throughput import N_CLASSES, seed_network

from sequifier.config.schema import GlobalTrainingConfig
from sequifier.distributed.launch import free_port
from sequifier.distributed.parallel import training_module
from sequifier.distributed.ranks import Ranks
from sequifier.training.losses import TargetLosses


def tokens_per_second(args: argparse.Namespace, ranks: Ranks) -> float:
    torch.manual_seed(0)
    network, targets, class_ids = seed_network(args.dim, args.layers, args.heads, args.ffn, args.context)
    model = training_module(
        network, GlobalTrainingConfig(context_length=args.context, distributed=True), ranks, torch.device("cpu")
    )
    losses = TargetLosses(
        targets, {"event": "CrossEntropyLoss"}, {}, {k: torch.tensor(v) for k, v in class_ids.items()}
    )
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(ranks.rank)
    inputs = {"event": torch.randint(3, N_CLASSES, (args.batch_size, args.context), generator=generator)}
    expected = {"event": torch.randint(3, N_CLASSES, (args.batch_size, args.context), generator=generator)}
    valid = torch.ones(args.batch_size, args.context, dtype=torch.bool)

    def step() -> None:
        sums = losses.sums(model("default", inputs, None), expected, valid)
        losses.aggregate({k: total / count for k, (total, count) in sums.items()}).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    started = time.perf_counter()
    for _ in range(args.steps):
        step()
    elapsed = time.perf_counter() - started
    return ranks.world_size * args.steps * args.batch_size * args.context / elapsed


def rank_main(index: int, args: argparse.Namespace, results) -> None:
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.ranks))
    dist.init_process_group("gloo", rank=index, world_size=args.ranks)
    try:
        rate = tokens_per_second(args, Ranks(index, args.ranks, index))
        if index == 0:
            results.put(rate)
    finally:
        dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("ranks", 2), ("steps", 20), ("batch-size", 64), ("context", 128)):
        parser.add_argument(f"--{name}", type=int, default=default)
    for name, default in (("dim", 128), ("layers", 2), ("heads", 8), ("ffn", 512)):
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args()
    single = tokens_per_second(args, Ranks())
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(rank_main, args=(args, results), nprocs=args.ranks, join=True)
    ranked = results.get()
    print(
        f"model: dim {args.dim}, {args.layers} layers, {args.heads} heads, ffn {args.ffn} swiglu, ctx {args.context}, "
        f"batch {args.batch_size} per process, {os.cpu_count()} cores"
    )
    print(f"1 process, {torch.get_num_threads()} threads: {single:,.0f} tokens/s")
    threads = max(1, (os.cpu_count() or 1) // args.ranks)
    print(f"{args.ranks} ranks (DDP, gloo), {threads} threads each: {ranked:,.0f} tokens/s")
    print(f"scaling: {ranked / single:.2f}x")


if __name__ == "__main__":
    main()
