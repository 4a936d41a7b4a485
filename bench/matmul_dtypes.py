"""float32 against bfloat16 matrix products on this CPU, at the shapes of the seed-shaped model's training pass.

    .venv/bin/python bench/matmul_dtypes.py [--tokens 2048] [--repeats 50]

Each shape is (tokens x inner) @ (inner x outer), as the pass's projections and their gradients compute it
(`--tokens` rows: one pass of training/passes.py), then a 2048-square product for the CPU's peak. Prints the
CPU's bf16 flags, GFLOP/s per dtype and the bf16 speed-up. bf16 operands are cast once, before timing.
The last column is the float32 product through oneDNN with the right operand packed once beforehand into
oneDNN's layout (`torch.ops.mkldnn._linear_pointwise`, the kernel Inductor uses for linear layers on CPUs),
against torch's float32 `@`, which x86 builds send to MKL; the packing itself is not timed.
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
    return rate(lambda: a @ b, a.shape[0] * a.shape[1] * b.shape[1], repeats)


def packed_gflops(a: torch.Tensor, b: torch.Tensor, repeats: int) -> float | None:
    """a @ b through oneDNN with b packed beforehand; None where this torch has no oneDNN linear."""
    if not torch.backends.mkldnn.is_available():
        return None
    try:
        weight = torch.ops.mkldnn._reorder_linear_weight(b.t().contiguous(), a.shape[0])

        def product() -> torch.Tensor:
            return torch.ops.mkldnn._linear_pointwise(a, weight, None, "none", [], "")

        if not torch.allclose(product(), a @ b, rtol=1e-4, atol=1e-3):
            raise SystemExit("oneDNN's float32 product differs from torch's")
    except (AttributeError, RuntimeError):
        return None
    return rate(product, a.shape[0] * a.shape[1] * b.shape[1], repeats)


def rate(product, multiply_adds: int, repeats: int) -> float:
    for _ in range(3):
        product()
    started = time.perf_counter()
    for _ in range(repeats):
        product()
    return 2 * multiply_adds * repeats / (time.perf_counter() - started) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    n = args.tokens
    shapes = [(n, 128, 384), (n, 128, 1024), (n, 512, 128), (1024, n, 128), (2048, 2048, 2048)]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, bf16 CPU flags: {cpu_flags() or 'none'}")
    print(f"{'shape':>20} {'fp32 GFLOP/s':>13} {'bf16 GFLOP/s':>13} {'bf16 / fp32':>11} {'oneDNN packed / fp32':>21}")
    torch.manual_seed(0)
    for rows, inner, outer in shapes:
        a, b = torch.randn(rows, inner), torch.randn(inner, outer)
        single = gflops(a, b, args.repeats)
        half = gflops(a.bfloat16(), b.bfloat16(), args.repeats)
        packed = packed_gflops(a, b, args.repeats)
        packed_ratio = f"{packed / single:.2f}x" if packed else "n/a"
        shape = f"{rows}x{inner}x{outer}"
        print(f"{shape:>20} {single:>13.0f} {half:>13.0f} {half / single:>10.2f}x {packed_ratio:>21}")


if __name__ == "__main__":
    main()
