"""torch's intra-op CPU threads for the length of one run (`global_training.num_threads`)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

import torch

logger = logging.getLogger("sequifier")


@contextmanager
def torch_threads(count: int | None, distributed: bool) -> Iterator[None]:
    """Run the block with `count` intra-op threads (None: as set before, torch's choice or in a distributed run the
    node's cores shared among its processes), then restore the previous number."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    unset = "this node's CPU cores / its processes" if distributed else "torch's default"
    chosen = "global_training.num_threads" if count is not None else unset
    logger.info("torch intra-op threads: %d (%s)", torch.get_num_threads(), chosen)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
