"""Joining the process group: the address in the environment checked, the wait for the other ranks left open to a
stop signal, and an address that cannot be used named instead of torch's traceback."""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import torch
import torch.distributed as dist

from sequifier.config.errors import UserError

ADDRESS_VARIABLES = ("MASTER_ADDR", "MASTER_PORT")
POLL_S = 0.2


def check_address_set() -> None:
    """The address of rank 0's store, which torchrun sets and a hand-made environment may lack."""
    missing = [name for name in ADDRESS_VARIABLES if not os.environ.get(name)]
    if missing:
        raise UserError(
            " and ".join(missing),
            f"{'is' if len(missing) == 1 else 'are'} not set, but RANK, WORLD_SIZE and LOCAL_RANK are, so this process "
            "joins a group of processes as torchrun starts them; set MASTER_ADDR and MASTER_PORT, start it with "
            "torchrun, or unset RANK, WORLD_SIZE and LOCAL_RANK to have global_training.world_size processes spawned",
        )
    port = os.environ["MASTER_PORT"]
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError("MASTER_PORT", f"is {port!r}; a port is a whole number from 1 to 65535")


def join_group(backend: str, rank: int, world_size: int, timeout: timedelta, device: torch.device | None) -> None:
    """init_process_group, which waits in C++ for every rank (up to `timeout`), where Python's signal handlers
    cannot run: it waits in a thread, so that Ctrl-C or SIGTERM meanwhile end this process as they end a command."""
    outcome: list[BaseException | None] = []

    def join() -> None:
        try:
            dist.init_process_group(backend, rank=rank, world_size=world_size, timeout=timeout, device_id=device)
            outcome.append(None)
        except BaseException as error:  # handed to the main thread
            outcome.append(error)

    waiting = threading.Thread(target=join, name="sequifier-rendezvous", daemon=True)
    waiting.start()
    while waiting.is_alive():
        waiting.join(POLL_S)
    if outcome[0] is None:
        return
    if isinstance(outcome[0], dist.DistNetworkError):
        raise _address_refused(outcome[0]) from None
    raise outcome[0]


def _address_refused(error: dist.DistNetworkError) -> UserError:
    address = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
    said = " ".join(str(error).split())
    reason = said.rpartition("message: ")[2] if "message: " in said else said[:300]
    return UserError(
        "MASTER_ADDR and MASTER_PORT",
        f"the group's store at {address} cannot be used ({reason}); choose another MASTER_PORT "
        "(torchrun: --master-port) or check MASTER_ADDR",
    )
