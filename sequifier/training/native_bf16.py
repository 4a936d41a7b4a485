"""Whether a device computes bfloat16 products natively: the question `autocast: auto` asks before each run.

On a CPU that answer is a flag the kernel reports (AVX-512 BF16 dot products or AMX tiles); elsewhere bf16
products are converted to float32 for the arithmetic and are slower, not faster. On CUDA it is the
compute capability (8.0 and newer have bf16 tensor cores).
"""

from __future__ import annotations

from pathlib import Path

import torch

CPU_FLAGS = ("amx_bf16", "avx512_bf16")
CPU_INFO = Path("/proc/cpuinfo")


def native_bf16(device: torch.device, cpu_info: Path = CPU_INFO) -> str | None:
    """What makes bf16 products native on `device` (a CPU flag, a CUDA capability), or None where they are not."""
    if device.type == "cpu":
        return _cpu_flag(cpu_info)
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        return f"compute capability {major}.{minor}" if major >= 8 else None
    return None


def _cpu_flag(cpu_info: Path) -> str | None:
    try:
        text = cpu_info.read_text(errors="replace")
    except OSError:
        return None
    flags = next((line.partition(":")[2].split() for line in text.splitlines() if line.startswith("flags")), [])
    return next((flag for flag in CPU_FLAGS if flag in flags), None)
