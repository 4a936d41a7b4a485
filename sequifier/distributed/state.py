"""Whole state dicts of a network and its optimizer, also when FSDP holds them in shards across the ranks.

Gathering is a collective: every rank calls these at the same point. Under FSDP only rank 0 receives
the gathered dicts (on the CPU), which is where checkpoints and exports are written.
"""

from __future__ import annotations

from typing import Any

import torch


def _options(on_main_only: bool):
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, cpu_offload=on_main_only)


def model_state(network: torch.nn.Module, sharded: bool) -> dict[str, torch.Tensor]:
    """The network's weights; under FSDP gathered on rank 0 (the other ranks receive an empty dict)."""
    if not sharded:
        return network.state_dict()
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    return get_model_state_dict(network, options=_options(on_main_only=True))


def load_model_state(network: torch.nn.Module, state: dict[str, torch.Tensor], sharded: bool) -> None:
    """Load whole weights (every rank holds them, read from a checkpoint) into the network or its shards."""
    if not sharded:
        network.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import set_model_state_dict

    set_model_state_dict(network, state, options=_options(on_main_only=False))


def optimizer_state(network: torch.nn.Module, optimizer: torch.optim.Optimizer, sharded: bool) -> dict[str, Any]:
    if not sharded:
        return optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    return get_optimizer_state_dict(network, optimizer, options=_options(on_main_only=True))


def optimizer_loader(network: torch.nn.Module, sharded: bool):
    """How to load a saved optimizer state into the rebuilt optimizer."""
    if not sharded:
        return lambda optimizer, state: optimizer.load_state_dict(state)
    from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

    return lambda optimizer, state: set_optimizer_state_dict(
        network, optimizer, state, options=_options(on_main_only=False)
    )
