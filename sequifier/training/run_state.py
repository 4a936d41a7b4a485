"""What a run's checkpoint holds, and a run restored from one.

Everything the rest of the run depends on: the weights, the optimization lifecycle, where the run
stands, the monitor and the best model, the last evaluation, the lengths of the metric files, and
per rank its random streams and partial epoch sums. In a distributed run every rank takes part in
gathering (FSDP shards, random streams) and rank 0 writes.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sequifier.config.errors import UserError
from sequifier.distributed.state import load_model_state, model_state, optimizer_loader, optimizer_state
from sequifier.training.checkpoint import checkpoint_path, read_checkpoint, write_checkpoint
from sequifier.training.divergence import check_weights
from sequifier.training.evaluation import Evaluation
from sequifier.training.profile import timed
from sequifier.training.progress import RunProgress
from sequifier.training.resume import check_fingerprint, other_ways_on
from sequifier.training.rng import capture_rng, restore_rng

if TYPE_CHECKING:
    from sequifier.training.engine import Trainer

logger = logging.getLogger("sequifier")


def new_run_id(run_dir: Path) -> str:
    """The id of a run that starts now: its start time to the millisecond and its Hydra job folder, so that two
    runs of one model name (a sweep run again, its job 0 folder named `0` each time) never share one. A resumed
    run keeps the id its checkpoint holds."""
    started = datetime.now()
    return f"{started:%Y-%m-%dT%H-%M-%S}.{started.microsecond // 1000:03d}_{run_dir.name}"


def whole_state(trainer: Trainer) -> tuple[dict, dict]:
    """The network's and the optimization's state dicts, whole (gathered on rank 0 under FSDP)."""
    optimization = trainer.optimization.state_dict()
    if trainer.sharded and optimization["phase"] is not None:
        optimization["optimizer"] = optimizer_state(trainer.network, trainer.optimization.optimizer, trainer.sharded)
    return model_state(trainer.network, trainer.sharded), optimization


@timed("checkpointing")
def save_snapshot(trainer: Trainer, name: str | None) -> Path:
    """Write snapshot `name` (None: only latest); every rank calls this, rank 0 writes."""
    check_weights(trainer.network, f"checkpoint {name or 'latest'}")
    own = {"rng": capture_rng(), "progress": trainer.progress.to_plain()}
    per_rank = trainer.ranks.gather(own)
    weights, optimization = whole_state(trainer)
    if not trainer.ranks.is_main:
        return checkpoint_path(trainer.checkpoints, name)
    evaluations = trainer.last_evaluation
    state: dict[str, Any] = {
        "fingerprint": trainer.fingerprint,
        "run_id": trainer.run_id,
        "progress": trainer.progress.to_plain(),
        "model_state_dict": weights,
        "best_model_state_dict": trainer.best_state,
        "optimization": optimization,
        "monitor": {"best_value": trainer.monitor.best_value, "best_epoch": trainer.monitor.best_epoch},
        "last_evaluation": {k: dataclasses.asdict(v) for k, v in evaluations.items()} if evaluations else None,
        "last_finite_loss": trainer.last_finite_loss,
        "ranks": per_rank,
        "metric_bytes": trainer.records.sizes(),
        "model_name": trainer.spec.model_name,  # whose logs/ folders metric_bytes measure
    }
    path = write_checkpoint(trainer.checkpoints, name, state)
    trainer.records.checkpoint_written()
    logger.info("checkpoint %s", path)
    return path


def restore(trainer: Trainer, path: Path) -> dict[str, Any]:
    """Load everything the rest of the run depends on from the checkpoint at `path`; returns its state."""
    try:
        state = read_checkpoint(path)
    except UserError as unreadable:
        raise UserError(unreadable.where, unreadable.problem + other_ways_on(trainer.spec, path)) from None
    check_fingerprint(state["fingerprint"], trainer.fingerprint, path)
    load_model_state(trainer.network, state["model_state_dict"], trainer.sharded)
    trainer.optimization.load_state_dict(state["optimization"], optimizer_loader(trainer.network, trainer.sharded))
    own = state["ranks"][trainer.ranks.rank]
    trainer.progress = RunProgress.from_plain(own["progress"])
    trainer.monitor.best_value = state["monitor"]["best_value"]
    trainer.monitor.best_epoch = state["monitor"]["best_epoch"]
    trainer.best_state = state["best_model_state_dict"]
    evaluations = state["last_evaluation"]
    trainer.last_evaluation = {k: Evaluation(**v) for k, v in evaluations.items()} if evaluations is not None else None
    trainer.last_finite_loss = state["last_finite_loss"]
    trainer.run_id = state["run_id"]
    restore_rng(own["rng"])
    return state
