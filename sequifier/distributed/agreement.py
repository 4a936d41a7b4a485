"""What all ranks of a distributed run must decide alike: the loss normalization, when to snapshot, when to stop;
and the data they read must be the same.

Each is one small all-reduce; in a single-process run each is the local value.
"""

from __future__ import annotations

import torch

from sequifier.config.errors import UserError
from sequifier.distributed.ranks import Ranks
from sequifier.training.snapshots import LATEST_ONLY, PERSISTENT
from sequifier.training.stop import GracefulStop

SNAPSHOT_CODES = (None, LATEST_ONLY, PERSISTENT)


def rank_counts(counts: dict[str, torch.Tensor], ranks: Ranks) -> dict[str, torch.Tensor]:
    """Per target, the counted targets of all ranks' microbatches (one all-reduce; this rank's own when alone)."""
    if not ranks.joined:
        return counts
    summed = ranks.sum(torch.stack([count.detach().to(torch.float64) for count in counts.values()]))
    return {name: summed[index] for index, name in enumerate(counts)}


def rank_means(
    sums: dict[str, tuple[torch.Tensor, torch.Tensor]], counts: dict[str, torch.Tensor], ranks: Ranks
) -> dict[str, torch.Tensor]:
    """Per target, this rank's loss sum over `counts`, the counted targets of all ranks (from rank_counts).

    Scaled by the world size, because DDP averages the ranks' gradients: the averaged gradient is then
    the gradient of the mean over the union of the ranks' samples, as one process would compute it.
    """
    return {
        name: total / counts[name].clamp(min=1).to(total.dtype) * ranks.world_size for name, (total, _) in sums.items()
    }


def agreed_snapshot(kind: str | None, ranks: Ranks) -> str | None:
    """Rank 0's decision: timed snapshots follow its clock, batch snapshots are the same everywhere."""
    if not ranks.joined:
        return kind
    code = torch.tensor([SNAPSHOT_CODES.index(kind) if ranks.is_main else 0])
    return SNAPSHOT_CODES[int(ranks.max(code)[0])]


def agreed_stop(stop: GracefulStop, ranks: Ranks) -> bool:
    """True on every rank once any rank was asked to stop."""
    if not ranks.joined:
        return stop.requested is not None
    if bool(ranks.max(torch.tensor([int(stop.requested is not None)]))[0]):
        stop.requested = stop.requested or "a signal to another process"
        return True
    return False


def check_ranks_read_alike(split_digests: dict[str, dict[str, str]], ranks: Ranks) -> None:
    """Refuse, on every rank, a run whose ranks read other contents of a split: each rank holds the data folder's
    lock only while it reads, so a preprocess run can swap new outputs in between two ranks' reads."""
    if not ranks.joined:
        return
    read = ranks.gather(split_digests)
    for rank, digests in enumerate(read[1:], start=1):
        for part, splits in read[0].items():
            if digests.get(part) != splits:
                raise UserError(
                    f"dataset_training.{part}.metadata_config_path",
                    f"rank 0 and rank {rank} of this run read other contents of its splits (a preprocess run "
                    "replaced them between their reads); start the run again",
                )
