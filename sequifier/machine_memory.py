"""This machine's physical memory, against which sizes that cannot fit are refused before any work."""

from __future__ import annotations

import os

GIB = 2**30


def physical_memory() -> int | None:
    """Bytes of physical memory; None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None
