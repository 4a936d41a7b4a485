"""torch's intra-op CPU threads for the length of one run (`global_training.num_threads`)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

import torch

logger = logging.getLogger("sequifier")


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run the block with `count` intra-op threads (None: torch's choice), then restore the previous number."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    chosen = "global_training.num_threads" if count is not None else "torch's default"
    logger.info("torch intra-op threads: %d (%s)", torch.get_num_threads(), chosen)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
