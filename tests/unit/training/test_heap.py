"""Under glibc, the steps of a training process reuse freed activation memory without faulting it in again."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the heap settings are glibc's")

STEPS = """
import resource, statistics, sys
import torch
from sequifier.training.heap import keep_freed_memory

applied = keep_freed_memory() if sys.argv[1] == "keep" else False
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.SiLU(), torch.nn.Linear(2048, 256))
inputs = torch.randn(8192, 256)  # activations of 64 MiB: above glibc's largest adaptive mmap threshold
faults = []
for step in range(8):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    model(inputs).square().mean().backward()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(applied, int(statistics.median(faults[3:])))
"""


def step_faults(mode: str, **environment: str) -> tuple[str, int]:
    """Whether the settings applied, and the median minor page faults of a steady training step."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))} | environment
    result = subprocess.run([sys.executable, "-c", STEPS, mode], capture_output=True, text=True, env=env, check=True)
    applied, faults = result.stdout.split()
    return applied, int(faults)


def test_steady_training_steps_reuse_freed_memory_without_page_faults():
    applied, faults = step_faults("keep")
    default_faults = step_faults("default")[1]
    assert default_faults > 10_000  # each 64 MiB block is 16,384 pages faulted in one by one
    # A step now and then lays a few MiB onto heap pages not touched before (6,144 faults once in a few runs).
    assert applied == "True" and faults * 4 < default_faults


def test_malloc_settings_of_the_user_are_left_alone():
    assert step_faults("keep", GLIBC_TUNABLES="glibc.malloc.arena_max=2")[0] == "False"
    assert step_faults("keep", MALLOC_TRIM_THRESHOLD_="1000000")[0] == "False"
