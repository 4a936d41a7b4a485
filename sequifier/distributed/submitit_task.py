"""A Submitit task as part of one run: its job's ranks, the signals that stop it, and its requeue.

- A job of several tasks (nodes x tasks_per_node) is ONE distributed run: each task exports the
  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT that Submitit's job environment gives it,
  and launch attaches to that group as it does under torchrun.
- Slurm sends Submitit's requeue signal (USR2 unless SUBMITIT_PREEMPT_SIGNAL says otherwise)
  `signal_delay_s` before a time limit and on preemption. The run stops gracefully on it (or on SIGUSR1),
  writes `latest`, and only then hands over to Submitit's own handler, which stores the launcher's call
  again and requeues the job (rank 0); the requeued job resumes from `latest`. SIGTERM stays Submitit's.
"""

from __future__ import annotations

import logging
import os
import signal
import time

from sequifier.config.errors import UserError
from sequifier.deferred_signals import stopping_signals
from sequifier.distributed.environment import log_errors_only_off_rank_0

logger = logging.getLogger("sequifier")
REQUEUE_WAIT_S = 120.0  # Slurm ends the requeued job's tasks within seconds (KillWait)


def in_submitit_job() -> bool:
    """Whether this process runs a Submitit job (Submitit names the job's folder in the environment)."""
    return "SUBMITIT_FOLDER" in os.environ


def requeue_signal() -> signal.Signals:
    from submitit import JobEnvironment

    return signal.Signals["SIG" + JobEnvironment.USR_SIG]


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop a run gracefully in this process."""
    if in_submitit_job():
        return tuple(dict.fromkeys((requeue_signal(), signal.SIGUSR1)))
    return (*stopping_signals(), signal.SIGUSR1)


def join_job_tasks(distributed: bool) -> None:
    """In a job of several tasks, export the torch.distributed environment of this task's rank."""
    if not in_submitit_job():
        return
    from submitit import JobEnvironment
    from submitit.helpers import TorchDistributedEnvironment

    tasks = JobEnvironment().num_tasks
    if tasks < 2:
        return
    if not distributed:
        raise UserError(
            "global_training.distributed",
            f"the job runs {tasks} tasks, which would train the same model {tasks} times; "
            "set global_training.distributed=true or hydra.launcher.tasks_per_node=1",
        )
    ranks = TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
    log_errors_only_off_rank_0(ranks.rank)


def requeue_after_stop() -> None:
    """After a graceful stop wrote `latest`: Submitit's handler stores the call again and requeues the job.

    On rank 0 it exits the process (or raises when Submitit will not requeue). The other ranks then wait for
    that requeue to end their task, for at most REQUEUE_WAIT_S, and return: a task that exits first can end
    the job step, and rank 0 with it, before the requeue is recorded (Submitit's handler warns of the same).
    """
    from submitit import JobEnvironment

    number = requeue_signal()
    handler = signal.getsignal(number)
    if callable(handler):
        handler(number, None)
    if JobEnvironment().global_rank != 0:
        logger.info("waiting for rank 0 to requeue the job")
        time.sleep(REQUEUE_WAIT_S)
