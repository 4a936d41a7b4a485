"""The C heap of a CPU training process: freed step memory stays mapped for the next step instead of going back.

glibc serves blocks above its mmap threshold (at most 32 MiB by default) with fresh mappings and trims the
heap's free top, so every training step would fault its large activation blocks in again, page by page.
Raising both thresholds keeps those pages resident between steps; the peak resident set stays what the
step needs at once. What loading the data freed is handed back first, so that it does not stay resident
beside the steps' memory.
"""

from __future__ import annotations

import ctypes
import logging
import os

logger = logging.getLogger("sequifier")

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLDS = (256 * 2**20, 32 * 2**20)  # the first this glibc accepts; older ones cap it at 32 MiB
TRIM_THRESHOLD = 2**30
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def keep_freed_memory() -> bool:
    """Return the heap's free memory to the kernel, then raise glibc's mmap and trim thresholds for this
    process (once the data are loaded, before the first step); whether the thresholds were set.

    Nothing changes off glibc, or where the user set malloc tunables (the variables above or glibc.malloc
    in GLIBC_TUNABLES). The mmap threshold goes first: a trim threshold alone would turn glibc's adaptive
    mmap threshold off at its 128 KiB floor.
    """
    if any(os.environ.get(name) for name in USER_SETTINGS) or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    if not all(hasattr(libc, name) for name in ("gnu_get_libc_version", "mallopt", "malloc_trim")):
        return False
    libc.malloc_trim(0)
    threshold = next((value for value in MMAP_THRESHOLDS if libc.mallopt(M_MMAP_THRESHOLD, value) == 1), None)
    if threshold is None or libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:
        return False
    logger.debug("glibc heap: mmap threshold %d MiB, trim threshold %d MiB", threshold >> 20, TRIM_THRESHOLD >> 20)
    return True
