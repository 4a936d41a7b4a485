"""How a Submitit task ends after a graceful stop: requeued, or (its `max_num_timeout` used up) stopped for good.

Submitit's handler raises on rank 0 when it will not requeue the job ("timed-out too many times"); the task then
ends normally, its result saying that the run stopped and can be resumed from `latest.pt`. The other ranks tell
the same from the handler's state (without it they would wait for a requeue that never comes) and end too.
"""

from __future__ import annotations

import logging
import signal

from sequifier.distributed.submitit_task import requeue_after_stop, requeue_signal

logger = logging.getLogger("sequifier")


def requeued_after_stop() -> bool:
    """Hand over to Submitit's requeue (rank 0 exits the process there); False when Submitit does not requeue."""
    from submitit import JobEnvironment
    from submitit.core.utils import UncompletedJobError

    if JobEnvironment().global_rank != 0 and not submitit_requeues():
        return False
    try:
        requeue_after_stop()
    except UncompletedJobError as refused:
        logger.warning("%s", refused)
        return False
    return True


def submitit_requeues() -> bool:
    """Whether Submitit's handler requeues the job now, reckoned as it does (a job that timed out more than
    `max_num_timeout` times is not requeued); True when the handler is not Submitit's."""
    owner = getattr(signal.getsignal(requeue_signal()), "__self__", None)
    delayed = getattr(owner, "_delayed", None)
    if delayed is None or not hasattr(owner, "has_timed_out"):
        return True
    return delayed._timeout_countdown - int(owner.has_timed_out()) >= 0
