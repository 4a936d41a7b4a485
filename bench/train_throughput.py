"""Training throughput of the seed-shaped model on this machine: tokens/s (each a counted target) and MFU.

    .venv/bin/python bench/train_throughput.py [--batch-size 64] [--context 128] [--steps 30]

MFU = model FLOPs per token x tokens/s / fp32 matmul peak, the peak measured in the same run
with a large square matmul. Model FLOPs per token follow the usual 6N + 12·L·d·T estimate
(forward + backward of every weight matmul, plus attention scores and values).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from sequifier.config.network import ColumnSpec
from sequifier.config.schema import ArchitectureConfig, AttentionConfig, FeedForwardConfig, PositionEncodingConfig
from sequifier.model.backbone import Backbone
from sequifier.model.decoders import Decoder, predictable_class_ids
from sequifier.model.ingestion.embedding import EmbeddingIngestion
from sequifier.model.network import Interface, SequifierNetwork
from sequifier.training.losses import TargetLosses

N_CLASSES = 27


def seed_network(
    dim: int, layers: int, heads: int, ffn: int, context: int
) -> tuple[SequifierNetwork, list[ColumnSpec], dict]:
    architecture = ArchitectureConfig(
        dim_model=dim,
        num_layers=layers,
        max_context_length=context,
        attention=AttentionConfig(type="mha", n_heads=heads, n_kv_heads=heads),
        feed_forward=FeedForwardConfig(dim=ffn, activation="swiglu"),
        position_encoding=PositionEncodingConfig(type="rope"),
        dropout=0.1,
    )
    event = ColumnSpec("event", "categorical", N_CLASSES)
    class_ids = {"event": predictable_class_ids(event, ())}
    interface = Interface(
        EmbeddingIngestion([event], {"event": dim}, dim, 0, 0.0),
        torch.nn.Identity(),
        Decoder(dim, [event], class_ids, 1),
    )
    return SequifierNetwork(Backbone(architecture, context), {"default": interface}), [event], class_ids


@dataclass
class SeedTraining:
    """A seed-shaped network with AdamW on one fixed random batch: `forward` gives the loss, `step` trains once."""

    network: SequifierNetwork
    forward: Callable[[], torch.Tensor]
    step: Callable[[], None]


def seed_training(
    batch_size: int,
    context: int,
    dim: int = 128,
    layers: int = 2,
    heads: int = 8,
    ffn: int = 512,
    device: str = "cpu",
    bf16: bool = False,
    compiled: bool = False,
) -> SeedTraining:
    """On `device`, with the forward and loss under bf16 autocast when `bf16`, the network compiled when `compiled`."""
    network, targets, class_ids = seed_network(dim, layers, heads, ffn, context)
    network.to(device)
    run = torch.compile(network) if compiled else network
    losses = TargetLosses(
        targets, {"event": "CrossEntropyLoss"}, {}, {k: torch.tensor(v) for k, v in class_ids.items()}
    )
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3)
    inputs = {"event": torch.randint(3, N_CLASSES, (batch_size, context), device=device)}
    targets_batch = {"event": torch.randint(3, N_CLASSES, (batch_size, context), device=device)}
    valid = torch.ones(batch_size, context, dtype=torch.bool, device=device)
    device_type = torch.device(device).type

    def forward() -> torch.Tensor:
        with torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
            sums = losses.sums(run("default", inputs, None), targets_batch, valid)
            return losses.aggregate({k: total / count for k, (total, count) in sums.items()})

    def step() -> None:
        forward().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return SeedTraining(network, forward, step)


def saved_bytes(run: Callable[[], object]) -> int:
    """Bytes of the distinct storages that autograd keeps for backward while `run` records."""
    storages: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storages[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        run()
    return sum(storages.values())


def matmul_peak(size: int = 2048, repeats: int = 10, device: str = "cpu", dtype: torch.dtype = torch.float32) -> float:
    """FLOP/s of a large square matrix product of random `dtype` values on `device`."""
    a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
    a @ b
    synchronize(device)
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize(device)
    return 2 * size**3 * repeats / (time.perf_counter() - started)


def synchronize(device: str) -> None:
    """Wait for the work queued on `device` (a no-op on the CPU), so that a host clock times it."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def model_flops_per_token(network: SequifierNetwork, layers: int, dim: int, context: int) -> float:
    embedding = sum(p.numel() for n, p in network.named_parameters() if "embeddings" in n)
    matmul_params = sum(p.numel() for p in network.parameters()) - embedding
    return 6 * matmul_params + 12 * layers * dim * context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=512)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    training = seed_training(args.batch_size, args.context, args.dim, args.layers, args.heads, args.ffn)
    network, step = training.network, training.step

    for _ in range(3):
        step()
    started = time.perf_counter()
    for _ in range(args.steps):
        step()
    elapsed = time.perf_counter() - started
    tokens_per_second = args.steps * args.batch_size * args.context / elapsed
    peak = matmul_peak()
    flops = model_flops_per_token(network, args.layers, args.dim, args.context)
    print(
        f"model: dim {args.dim}, {args.layers} layers, {args.heads} heads, ffn {args.ffn} swiglu, ctx {args.context}, "
        f"batch {args.batch_size}, {sum(p.numel() for p in network.parameters())} parameters, "
        f"{torch.get_num_threads()} threads"
    )
    print(f"tokens/s: {tokens_per_second:,.0f}")
    print(f"samples/s: {tokens_per_second / args.context:,.0f}")
    print(f"model FLOPs/token: {flops:,.0f}")
    print(f"fp32 matmul peak: {peak / 1e9:,.1f} GFLOP/s")
    print(f"MFU: {100 * flops * tokens_per_second / peak:.1f}%")


if __name__ == "__main__":
    main()
