"""How many rows one forward (and backward) pass takes, and a microbatch cut into such passes.

A pass bounds the activations held at once: on CPUs, where the step is bound by memory bandwidth rather
than by the size of its matrix products, passes of a few thousand tokens lower the peak RSS at the same
speed. Training normalizes each pass's loss by the counted targets of its whole microbatch, so the
gradients the passes add up are those of one pass over the microbatch; validation sums its totals.
"""

from __future__ import annotations

import dataclasses

import torch

from sequifier.config.schema import GlobalTrainingConfig
from sequifier.data.views import Batch

CPU_TOKENS_PER_PASS = 2048


def rows_per_pass(rows: int, tokens_per_row: int, training: GlobalTrainingConfig, device: torch.device) -> int:
    """Rows of each pass over `rows` rows (the last pass may have fewer): as many as fit max_tokens_per_pass.

    Unset, CPUs take CPU_TOKENS_PER_PASS tokens a pass and other devices the whole batch. A distributed run
    always takes whole batches: its ranks' collectives (DDP's gradient all-reduce, FSDP's weight gathers) run
    once per pass and must stay in step while the ranks' last batches differ in size.
    """
    limit = training.max_tokens_per_pass
    if training.distributed or (limit is None and device.type != "cpu"):
        return max(rows, 1)
    if limit is None:
        limit = CPU_TOKENS_PER_PASS
    return max(1, min(rows, limit // max(tokens_per_row, 1)))


def validation_rows(training: GlobalTrainingConfig, tokens_per_row: int, device: torch.device) -> int:
    """Rows of one validation forward: inference_batch_size views, fewer where a pass holds fewer."""
    return rows_per_pass(training.inference_batch_size, tokens_per_row, training, device)


def largest_pass_tokens(training: GlobalTrainingConfig, device: torch.device) -> int:
    """Tokens of a CPU run's largest training or validation pass, whose activations are in the machine's memory."""
    if device.type != "cpu":
        return 0
    tokens = training.context_length
    training_rows = rows_per_pass(training.batch_size, tokens, training, device)
    return tokens * max(training_rows, validation_rows(training, tokens, device))


def batch_passes(batch: Batch, rows: int) -> list[Batch]:
    """`batch` cut into consecutive slices of `rows` rows (the last may be shorter)."""
    total = len(batch.target_valid)
    if rows >= total:
        return [batch]
    return [_rows(batch, slice(start, start + rows)) for start in range(0, total, rows)]


def _rows(batch: Batch, rows: slice) -> Batch:
    pick = lambda tensors: {name: tensor[rows] for name, tensor in tensors.items()}
    pad = batch.left_pad_lengths[rows] if batch.left_pad_lengths is not None else None
    return dataclasses.replace(
        batch,
        inputs=pick(batch.inputs),
        targets=pick(batch.targets),
        persistence=pick(batch.persistence),
        target_valid=batch.target_valid[rows],
        left_pad_lengths=pad,
    )
