"""What a process learns from the environment its launcher set: its rank under torchrun, and the Hydra settings
that keep ranks other than 0 out of the project tree. No torch here: the command reads these before training."""

from __future__ import annotations

import atexit
import os
import tempfile
from pathlib import Path

from sequifier.config.compose import hydra_quoted

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


def under_torchrun() -> bool:
    """This process is a rank of a group started outside sequifier (torchrun, or Submitit's tasks)."""
    return all(name in os.environ for name in TORCHRUN_VARIABLES)


def partial_torchrun_variables() -> tuple[list[str], list[str]]:
    """The torchrun variables set and those missing, where some but not all are set (else two empty lists)."""
    present = [name for name in TORCHRUN_VARIABLES if name in os.environ]
    if len(present) in (0, len(TORCHRUN_VARIABLES)):
        return [], []
    return present, [name for name in TORCHRUN_VARIABLES if name not in present]


def this_rank() -> int:
    """The rank of this process in a run that attached to an outside group (torchrun, Submitit), else 0."""
    return int(os.environ.get("RANK", "0"))


def hydra_settings_of_this_rank() -> tuple[str, ...]:
    """Under torchrun, ranks other than 0 keep Hydra's run folder and log file out of the project tree, in a
    temporary folder that is removed at exit (Hydra writes nothing into it with these settings)."""
    rank = os.environ.get("RANK", "0")
    if rank == "0" or not under_torchrun():
        return ()
    elsewhere = Path(tempfile.gettempdir()) / f"sequifier-rank-{rank}-{os.getpid()}"
    atexit.register(_remove_if_empty, elsewhere)
    return ("hydra.output_subdir=null", f"hydra.run.dir={hydra_quoted(str(elsewhere))}", "hydra/job_logging=stdout")


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
