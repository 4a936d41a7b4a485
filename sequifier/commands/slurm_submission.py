"""The Slurm launcher of `sequifier train`: Hydra's Submitit launcher, with sbatch's refusal as a user error.

Hydra reports an exception of a launcher as a traceback. A job that sbatch refuses (an unknown partition, more
nodes than the cluster has) is a setting the user can fix: it leaves Hydra as `SubmissionRefused`, which the
command turns into one line `error: hydra.launcher.<field>: <sbatch's message>`. Hydra instantiates plugins of
the hydra_plugins package only, so `use_slurm_jobs` has it instantiate `SlurmJobs` for the presets' launcher.
"""

from __future__ import annotations

import re
import traceback
from typing import Any, Sequence

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

from sequifier.commands.launcher import SubmissionRefused
from sequifier.config.errors import UserError

SUBMITIT_SLURM = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
# What sbatch's message mentions -> the launcher's setting that made it (the first that matches names it).
FIELDS_IN_SBATCH_ERRORS = (
    (r"partition", "partition"),
    (r"account", "account"),
    (r"\bqos\b", "qos"),
    (r"--ntasks-per-node|tasks per node", "tasks_per_node"),
    (r"--cpus-per-task", "cpus_per_task"),
    (r"--nodes\b|node count", "nodes"),
    (r"--signal", "signal_delay_s"),
    (r"--time\b|time limit", "timeout_min"),
    (r"--mem\b|memory", "mem_gb"),
    (r"gres|gpu", "gpus_per_node"),
    (r"constraint", "constraint"),
)


class SlurmJobs(SlurmLauncher):
    """hydra-submitit-launcher's `submitit_slurm`, raising `SubmissionRefused` when sbatch refuses a job."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[Any]:
        from submitit.core.utils import FailedJobError

        try:
            return super().launch(job_overrides, initial_job_idx)
        except FailedJobError as error:
            if not raised_while_submitting(error):
                raise
            raise SubmissionRefused(refused_submission(str(error))) from None


def use_slurm_jobs() -> None:
    """Have Hydra instantiate `SlurmJobs` where the launcher config names hydra-submitit-launcher's SlurmLauncher."""
    from hydra.core.plugins import Plugins

    Plugins.instance().class_name_to_class[SUBMITIT_SLURM] = SlurmJobs


def raised_while_submitting(error: BaseException) -> bool:
    """Whether Submitit raised `error` while it ran sbatch (and not while it collected a job's result)."""
    return any(frame.f_code.co_name == "_submit_command" for frame, _ in traceback.walk_tb(error.__traceback__))


def refused_submission(message: str) -> UserError:
    """sbatch's message as an error of the setting it names, or of hydra.launcher."""
    lines = [re.sub(r"^sbatch: (error: )?", "", line.strip()) for line in message.strip().splitlines() if line.strip()]
    text = "; ".join(dict.fromkeys(lines)) or "sbatch refused the job"
    field = next((name for pattern, name in FIELDS_IN_SBATCH_ERRORS if re.search(pattern, text, re.I)), None)
    return UserError(f"hydra.launcher.{field}" if field else "hydra.launcher", text)
