"""What `sequifier train` settles about a Hydra launcher before it submits anything.

- Under the Slurm presets a requeued job must continue where it stopped: `global_training.resume.policy`
  is `if_exists` unless the user's file or command line chose a policy.
- A job of several tasks (nodes x tasks_per_node) trains one distributed run, so it needs
  `global_training.distributed: true`; otherwise it is refused here, before submission.
- A setting gets a value of its type and range (`timeout_min` at least 1: Slurm reads 0 as no limit, and a job
  without a limit is never signalled nor requeued); what sbatch still refuses is reported by the launcher
  (commands/slurm_submission.py), which Hydra uses for the Slurm presets in place of hydra-submitit-launcher's.
"""

from __future__ import annotations

from typing import Any

import yaml

from sequifier.config.compose import Overrides, TrainEntry, last_value, launcher_settings, parse_overrides
from sequifier.config.errors import UserError, did_you_mean
from sequifier.config.schema import TrainConfig

SLURM_PRESETS = ("submitit_slurm", "slurm_ddp")
RESUME_POLICY = "global_training.resume.policy"
# The least value of a launcher's numbers that sbatch (or Submitit) accepts.
LEAST_VALUES = {
    "nodes": 1,
    "tasks_per_node": 1,
    "cpus_per_task": 1,
    "gpus_per_node": 0,
    "mem_gb": 0,
    "timeout_min": 1,
    "signal_delay_s": 0,
    "max_num_timeout": 0,
    "array_parallelism": 1,
}
WHY_LEAST = {"timeout_min": " (Slurm reads 0 or less as no time limit: the job would never stop to be requeued)"}


class SubmissionRefused(BaseException):
    """sbatch refused a job; derived from BaseException so that it passes Hydra's report of a launcher's error."""

    def __init__(self, error: UserError) -> None:
        super().__init__(str(error))
        self.error = error


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def chosen_launcher(overrides: list[str]) -> str | None:
    return last_value(overrides, "hydra/launcher")


def selects_a_launcher(overrides: list[str]) -> bool:
    return any(_key(o) == "hydra/launcher" or _key(o).startswith("hydra.launcher.") for o in overrides)


def with_launcher_defaults(overrides: Overrides, entry: TrainEntry) -> Overrides:
    """The overrides, plus `resume.policy=if_exists` under a Slurm preset when the user chose no policy."""
    if chosen_launcher(overrides.all) not in SLURM_PRESETS:
        return overrides
    if any(_chooses_a_policy(o) for o in overrides.all) or _file_policy(entry.node) is not None:
        return overrides
    return parse_overrides(overrides.all + [f"{RESUME_POLICY}=if_exists"])


def prepare_slurm_launcher(overrides: list[str]) -> None:
    """Under a Slurm preset, the launcher reports sbatch's refusal of a job as an error of the setting it names."""
    if chosen_launcher(overrides) in SLURM_PRESETS:
        from sequifier.commands.slurm_submission import use_slurm_jobs

        use_slurm_jobs()


def _chooses_a_policy(override: str) -> bool:
    """The policy itself, the whole resume section given with a policy, or the section removed (its default)."""
    section = RESUME_POLICY.rpartition(".")[0]
    if _key(override) == RESUME_POLICY:
        return True
    return _key(override) == section and (override.startswith("~") or "policy" in override.partition("=")[2])


def _file_policy(node: dict[str, Any]) -> Any:
    for key in RESUME_POLICY.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def check_tasks(entry: TrainEntry, combination: list[str], config: TrainConfig) -> None:
    """Refuse a job of several tasks that would train the same model once per task."""
    if not selects_a_launcher(combination) or config.global_training.distributed:
        return
    settings = launcher_settings(entry, combination)
    nodes, per_node = int(settings.get("nodes") or 1), int(settings.get("tasks_per_node") or 1)
    if nodes * per_node > 1:
        raise UserError(
            "hydra.launcher.tasks_per_node",
            f"{nodes} node(s) x {per_node} task(s) would train the same model {nodes * per_node} times; "
            "set global_training.distributed=true (e.g. global_training/distributed=ddp_gloo_cpu) "
            "or hydra.launcher.tasks_per_node=1",
        )


def check_launcher_keys(entry: TrainEntry, combinations: list[list[str]]) -> None:
    """Every `hydra.launcher.<field>` override names a setting of the launcher the job selects (Hydra's own
    answer suggests appending it with +, which the launcher then rejects with a traceback)."""
    settings_of: dict[tuple[str, ...], dict[str, Any]] = {}
    for combination in combinations:
        fields = [(o, _key(o).split(".")[2]) for o in combination if _key(o).startswith("hydra.launcher.")]
        if not fields:
            continue
        selection = tuple(o for o in combination if _key(o) == "hydra/launcher")
        if selection not in settings_of:
            settings_of[selection] = launcher_settings(entry, list(selection))
        known = [k for k in settings_of[selection] if k != "_target_"]
        launcher = chosen_launcher(list(selection)) or "basic"
        for override, field in fields:
            if field not in known:
                offered = (
                    f"its settings: {', '.join(known)}" if known else "it has none; select one: hydra/launcher=..."
                )
                raise UserError(
                    override,
                    f"{field!r} is not a setting of the launcher {launcher} ({offered}){did_you_mean(field, known)}",
                )
            _check_setting_type(override, field, settings_of[selection][field])


def _check_setting_type(override: str, field: str, default: Any) -> None:
    """A number or switch of the launcher gets a value of that type (Hydra's answer is "Error merging override")."""
    text = override.split("=", 1)[1] if "=" in override else ""
    if len(_key(override).split(".")) > 3 or not text.strip() or "${" in text:
        return
    value = yaml.safe_load(text)
    wanted = {bool: "true or false", int: "an integer", float: "a number"}.get(type(default))
    fits = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
    }.get(type(default), True)
    if wanted and not fits:
        raise UserError(override, f"the launcher's {field} must be {wanted}, got {value!r}")
    _check_setting_range(override, field, value)


def _check_setting_range(override: str, field: str, value: Any) -> None:
    least = LEAST_VALUES.get(field)
    if least is None or not isinstance(value, (int, float)) or isinstance(value, bool) or value >= least:
        return
    raise UserError(
        override, f"the launcher's {field} must be at least {least}, got {value!r}{WHY_LEAST.get(field, '')}"
    )
