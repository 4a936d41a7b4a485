"""What a process learns from the environment its launcher set: its rank under torchrun, and the Hydra settings
that keep ranks other than 0 out of the project tree. No torch here: the command reads these before training."""

from __future__ import annotations

import atexit
import logging
import os
import tempfile
from pathlib import Path

from sequifier.atomic import process_exists
from sequifier.config.compose import hydra_quoted
from sequifier.config.errors import UserError

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
RANK_FOLDER_PREFIX = "sequifier-rank-"


def under_torchrun() -> bool:
    """This process is a rank of a group started outside sequifier (torchrun, or Submitit's tasks)."""
    return all(name in os.environ for name in TORCHRUN_VARIABLES)


def torchrun_number(name: str) -> int:
    """The whole number a launcher exported as `name` (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE)."""
    value = os.environ[name]
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0 or (number == 0 and name.endswith("WORLD_SIZE")):
        kind = "a positive whole number" if name.endswith("WORLD_SIZE") else "a whole number from 0"
        raise UserError(
            name,
            f"is {value!r} in the environment, but torchrun sets it to {kind}; unset it unless this process is a "
            "rank that torchrun or a launcher started",
        )
    return number


def refuse_partial_torchrun_variables(world_size: int) -> None:
    """Some of torchrun's variables without the others are no group to join: starting `world_size` processes of
    its own, each task of a launcher that set them would train the whole run into the same files."""
    present = [name for name in TORCHRUN_VARIABLES if name in os.environ]
    missing = [name for name in TORCHRUN_VARIABLES if name not in os.environ]
    if present and missing:
        raise UserError(
            "global_training.distributed",
            f"the environment sets {' and '.join(present)} but not {' or '.join(missing)}, so this process is no "
            f"rank of a group started outside (torchrun sets all of {', '.join(TORCHRUN_VARIABLES)}); set "
            f"{' and '.join(missing)} to join one, or unset {' and '.join(present)} to let sequifier start its "
            f"{world_size} processes",
        )


def this_rank() -> int:
    """The rank of this process in a run that attached to an outside group (torchrun, Submitit), else 0; variables
    that no launcher would set together are refused."""
    if not under_torchrun():
        return 0
    rank, world_size, local_rank = (torchrun_number(name) for name in TORCHRUN_VARIABLES)
    local_world = torchrun_number("LOCAL_WORLD_SIZE") if "LOCAL_WORLD_SIZE" in os.environ else world_size
    for name, value, bound_name, bound in (
        ("RANK", rank, "WORLD_SIZE", world_size),
        (
            "LOCAL_RANK",
            local_rank,
            "LOCAL_WORLD_SIZE" if "LOCAL_WORLD_SIZE" in os.environ else "WORLD_SIZE",
            local_world,
        ),
    ):
        if value >= bound:
            raise UserError(
                name,
                f"is {value} in the environment, but {bound_name} is {bound}: a group's ranks run from 0 to "
                f"{bound_name} - 1; unset RANK, WORLD_SIZE and LOCAL_RANK unless this process is a rank that torchrun "
                "or a launcher started",
            )
    if local_world > world_size:
        raise UserError(
            "LOCAL_WORLD_SIZE",
            f"is {local_world} in the environment, but WORLD_SIZE is {world_size}: a node runs at most the group's "
            "processes; unset it unless this process is a rank that torchrun or a launcher started",
        )
    return rank


def log_errors_only_off_rank_0(rank: int) -> None:
    """Ranks other than 0 log errors only: rank 0 logs what every rank would repeat, warnings included."""
    if rank != 0:
        logging.getLogger("sequifier").setLevel(logging.ERROR)


def hydra_settings_of_this_rank() -> tuple[str, ...]:
    """Under torchrun, ranks other than 0 keep Hydra's run folder and log file out of the project tree, in a
    temporary folder that is removed at exit (Hydra writes nothing into it with these settings)."""
    rank = this_rank()
    if rank == 0:
        return ()
    parent = Path(tempfile.gettempdir())
    _remove_folders_of_killed_ranks(parent)
    elsewhere = parent / f"{RANK_FOLDER_PREFIX}{rank}-{os.getpid()}"
    atexit.register(_remove_if_empty, elsewhere)
    return ("hydra.output_subdir=null", f"hydra.run.dir={hydra_quoted(str(elsewhere))}", "hydra/job_logging=stdout")


def _remove_folders_of_killed_ranks(parent: Path) -> None:
    """The empty folders of ranks whose exit hook never ran (SIGKILL): their process is gone."""
    for folder in parent.glob(f"{RANK_FOLDER_PREFIX}*-*"):
        pid = folder.name.rpartition("-")[2]
        if pid.isdigit() and not process_exists(int(pid)):
            _remove_if_empty(folder)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
