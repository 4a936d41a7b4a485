"""float32 against bfloat16 matrix products on this CPU, at the shapes of the seed-shaped model's training pass.

    .venv/bin/python bench/matmul_dtypes.py [--tokens 2048] [--repeats 50]

Each shape is (tokens x inner) @ (inner x outer), as the pass's projections and their gradients compute it
(`--tokens` rows: one pass of training/passes.py), then a 2048-square product for the CPU's peak. Prints the
CPU's bf16 flags, GFLOP/s per dtype and the bf16 speed-up. bf16 operands are cast once, before timing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

BF16_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile")


def cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return [flag for flag in BF16_FLAGS if flag in flags]


def gflops(a: torch.Tensor, b: torch.Tensor, repeats: int) -> float:
    for _ in range(3):
        a @ b
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * a.shape[0] * a.shape[1] * b.shape[1] * repeats / (time.perf_counter() - started) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    n = args.tokens
    shapes = [(n, 128, 384), (n, 128, 1024), (n, 512, 128), (1024, n, 128), (2048, 2048, 2048)]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, bf16 CPU flags: {cpu_flags() or 'none'}")
    print(f"{'shape':>20} {'fp32 GFLOP/s':>13} {'bf16 GFLOP/s':>13} {'bf16 / fp32':>11}")
    torch.manual_seed(0)
    for rows, inner, outer in shapes:
        a, b = torch.randn(rows, inner), torch.randn(inner, outer)
        single = gflops(a, b, args.repeats)
        half = gflops(a.bfloat16(), b.bfloat16(), args.repeats)
        print(f"{f'{rows}x{inner}x{outer}':>20} {single:>13.0f} {half:>13.0f} {half / single:>10.2f}x")


if __name__ == "__main__":
    main()
