"""The module a distributed training step runs: DDP around the network, or the network sharded by FSDP.

Under DDP the engine keeps the bare network for everything but the training step (validation, state
dicts, export); the wrapper shares its parameters and keeps the ranks' gradients in step. FSDP (the
per-parameter sharding of `fully_shard`) shards each transformer layer and then the whole network in
place: every forward gathers the weights it needs, so all ranks run the same number of forwards, and
the whole state dict is gathered for checkpoints and export (see state.py).
"""

from __future__ import annotations

import warnings

import torch
from torch.nn.parallel import DistributedDataParallel

from sequifier.config.schema import GlobalTrainingConfig
from sequifier.distributed.ranks import Ranks
from sequifier.model.network import SequifierNetwork


def rank_device(device: str, ranks: Ranks) -> torch.device:
    """`cuda` means this rank's own GPU (cuda:<local_rank>) in a distributed run."""
    if ranks.joined and device.startswith("cuda"):
        return torch.device("cuda", ranks.local_rank)
    return torch.device(device)


def is_sharded(training: GlobalTrainingConfig, ranks: Ranks) -> bool:
    return ranks.joined and training.data_parallelism == "fsdp"


def training_module(
    network: SequifierNetwork, training: GlobalTrainingConfig, ranks: Ranks, device: torch.device
) -> torch.nn.Module:
    """The module the training step calls: the network itself (alone, or sharded in place by FSDP) or DDP around it.

    Parameters of interfaces a batch does not use get no gradient there, so several interfaces need
    DDP's search for unused parameters.
    """
    if not ranks.joined:
        return network
    if is_sharded(training, ranks):
        return _sharded(network, training, device)
    return DistributedDataParallel(
        network,
        device_ids=[device] if device.type == "cuda" else None,
        find_unused_parameters=len(network.interfaces) > 1,
    )


def _sharded(network: SequifierNetwork, training: GlobalTrainingConfig, device: torch.device) -> SequifierNetwork:
    """Each distinct transformer layer its own FSDP unit (layers shared by several positions stay in the root unit)."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    options: dict = {}
    if training.fsdp_cpu_offload:
        options["offload_policy"] = CPUOffloadPolicy(pin_memory=device.type == "cuda")
    if training.layer_autocast:
        options["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    # FSDP2 warns of every output that is a view (a real target's squeezed output), as an in-place op on it would
    # skip its all-gather; nothing changes an output in place (training gives DDP's weights exactly).
    warnings.filterwarnings("ignore", message=r"FSDP2-wrapped module \(.*\) returned a view tensor")
    layers = list(network.backbone.layers)
    if len({id(layer) for layer in layers}) == len(layers):
        for layer in layers:
            fully_shard(layer, **options)
    fully_shard(network, **options)
    return network


def reshard(network: torch.nn.Module) -> None:
    """Free the whole weights FSDP gathered for forwards without backward (validation), so only shards remain."""
    from torch.distributed.fsdp import FSDPModule

    for module in network.modules():
        if isinstance(module, FSDPModule):
            module.reshard()
