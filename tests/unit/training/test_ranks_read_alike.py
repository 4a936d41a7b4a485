"""The ranks of a distributed run (real gloo processes) refuse to train when they read other split contents."""

from __future__ import annotations

import json
from pathlib import Path

import torch.distributed as dist
import torch.multiprocessing as mp

from sequifier.config.errors import UserError
from sequifier.distributed.agreement import check_ranks_read_alike
from sequifier.distributed.ranks import Ranks


def _rank(rank: int, world_size: int, folder: str, digests: list[str]) -> None:
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=world_size)
    try:
        check_ranks_read_alike({"events.parts.default": {"train": digests[rank]}}, Ranks(rank, world_size))
        said = None
    except UserError as refusal:
        said = f"{refusal.where}: {refusal.problem}"
    finally:
        dist.destroy_process_group()
    Path(folder, f"rank-{rank}.json").write_text(json.dumps(said))


def test_every_rank_refuses_when_one_read_other_split_contents(tmp_path):
    """(Ranks that read alike train on: every distributed test shows it.)"""
    mp.spawn(_rank, args=(2, str(tmp_path), ["a", "b"]), nprocs=2)
    said = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in range(2)]
    expected = (
        "dataset_training.events.parts.default.metadata_config_path: rank 0 and rank 1 of this run read other "
        "contents of its splits (a preprocess run replaced them between their reads); start the run again"
    )
    assert said == [expected, expected]
