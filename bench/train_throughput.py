"""Training throughput of the seed-shaped model on this machine: tokens/s, counted targets/s and MFU.

    .venv/bin/python bench/train_throughput.py [--batch-size 64] [--context 128] [--steps 30]

MFU = model FLOPs per token x tokens/s / fp32 matmul peak, the peak measured in the same run
with a large square matmul. Model FLOPs per token follow the usual 6N + 12·L·d·T estimate
(forward + backward of every weight matmul, plus attention scores and values).
"""

from __future__ import annotations

import argparse
import time

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


def matmul_peak(size: int = 2048, repeats: int = 10) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / (time.perf_counter() - started)


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
    network, targets, class_ids = seed_network(args.dim, args.layers, args.heads, args.ffn, args.context)
    losses = TargetLosses(
        targets, {"event": "CrossEntropyLoss"}, {}, {k: torch.tensor(v) for k, v in class_ids.items()}
    )
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3)
    inputs = {"event": torch.randint(3, N_CLASSES, (args.batch_size, args.context))}
    targets_batch = {"event": torch.randint(3, N_CLASSES, (args.batch_size, args.context))}
    valid = torch.ones(args.batch_size, args.context, dtype=torch.bool)
    counted = 0

    def step() -> None:
        nonlocal counted
        outputs = network("default", inputs, None)
        sums = losses.sums(outputs, targets_batch, valid)
        counted += int(sums["event"][1])
        loss = losses.aggregate({k: total / count for k, (total, count) in sums.items()})
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    counted = 0
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
    print(f"counted targets/s: {counted / elapsed:,.0f} (every position of a full window is a target)")
    print(f"samples/s: {tokens_per_second / args.context:,.0f}")
    print(f"model FLOPs/token: {flops:,.0f}")
    print(f"fp32 matmul peak: {peak / 1e9:,.1f} GFLOP/s")
    print(f"MFU: {100 * flops * tokens_per_second / peak:.1f}%")


if __name__ == "__main__":
    main()
