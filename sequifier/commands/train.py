"""`sequifier train`: a config FILE and overrides -> one resolved RunSpec per job -> launch -> exported models.

    argv -> compose (Hydra) -> expand + validate -> capability checks -> resolve (metadata) -> RunSpec
         -> launch (in this process, spawned, under torchrun, or in Submitit jobs: all enter at the same seam)
         -> engine (training/engine.py) -> export (export/artifacts.py)

Every job of the command (one, or each combination of a `-m` sweep) is composed, validated and
resolved before any job starts. A job that Hydra runs in this process receives the RunSpec
prepared for it; a job that a launcher runs in another process rebuilds it once from the config
Hydra composed for it.

Torch and the engine load only once a valid config is checked against this machine, so `--help`, `--cfg` and
config errors stay fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from sequifier.commands.hydra_fields import check_hydra_field
from sequifier.commands.launcher import (
    SubmissionRefused,
    check_launcher_keys,
    check_tasks,
    chosen_launcher,
    prepare_slurm_launcher,
    with_launcher_defaults,
)
from sequifier.commands.record_folder import (
    check_chosen_folder,
    check_working_folder,
    remove_unused_record,
    resolved_folder_settings,
    run_folder_settings,
    sweep_folder,
    sweep_folder_held,
)
from sequifier.commands.submitit_stop import requeued_after_stop
from sequifier.commands.sweep import (
    HydraJob,
    current_job,
    report_sweep,
    start_sweep,
    sweep_model_name,
    swept_values,
    write_rank_result,
    write_result,
)
from sequifier.config.compose import (
    Overrides,
    TrainEntry,
    canonical_config,
    compose_entry,
    hydra_quoted,
    last_value,
    parse_overrides,
    read_entry,
    run_hydra,
)
from sequifier.config.errors import UserError, error_lines, file_system_error
from sequifier.config.resolve import RunSpec, resolve
from sequifier.config.schema import TrainConfig
from sequifier.config.typed import ProblemList
from sequifier.config.validate import check_file_stems
from sequifier.config.validate_training import config_warnings
from sequifier.distributed.environment import (
    hydra_settings_of_this_rank,
    refuse_partial_torchrun_variables,
    this_rank,
    torchrun_number,
    under_torchrun,
)
from sequifier.distributed.submitit_task import in_submitit_job
from sequifier.training.profile import PROFILE, timed
from sequifier.training.stop import STOPPED_EXIT_CODE, StopRequested
from sequifier.training.summary import run_summary

logger = logging.getLogger("sequifier")
PREPARED: dict[tuple[str, ...], RunSpec] = {}  # the jobs' RunSpecs, by their override lists
WRITTEN_BEFORE_IS_KEPT = (
    "what the run wrote before is kept: once the file can be written, the same command with "
    "global_training.resume.policy=if_exists added resumes from the latest checkpoint"
)


WHOLE_HYDRA_SECTIONS = ("hydra", "hydra.job", "hydra.run", "hydra.sweep")  # whose fields are checked one by one
UNSUPPORTED_HYDRA_SETTINGS = {
    "hydra.mode": "-m (--multirun) runs a sweep, and without it a single run; each has its own record folder",
    "hydra.searchpath": "the presets come from sequifier's own search path; a config file's fragments "
    "(`additional_config_paths`) add settings of your own files",
    "hydra.job.config.override_dirname": "sequifier names each sweep job's model and folder from its overrides "
    "itself (<model_name>-<key>=<value>, every swept key), so that no job's artifacts replace another's",
}


def run(args: argparse.Namespace) -> int:
    PROFILE.begin_command(enabled=args.profile)
    check_working_folder()
    overrides = parse_overrides(command_overrides(args))
    if any(
        o.split("=", 1)[0].lstrip("+") == "hydra.job.chdir" and o.split("=", 1)[1].lower() != "false"
        for o in overrides.all
    ):
        raise UserError(
            "hydra.job.chdir",
            "is not supported: sequifier resolves project_root and the paths of a config against the folder the "
            "command runs in, and keeps every job's record under outputs/ or multirun/ without changing folders",
        )
    sweeper = next((o for o in overrides.all if o.lstrip("+~").startswith(("hydra.sweeper", "hydra/sweeper"))), None)
    if sweeper is not None:
        raise UserError(
            sweeper.split("=", 1)[0].lstrip("+~"),
            "is not supported: sequifier sweeps with Hydra's basic sweeper over the values listed on the command "
            "line; write them there with -m (e.g. -m seed=1,2)",
        )
    for override in overrides.all:
        key = override.lstrip("+~").split("=", 1)[0]
        if key in WHOLE_HYDRA_SECTIONS:
            raise UserError(
                override, f"{key} is a section of Hydra's settings: set its fields one by one ({key}.<field>=...)"
            )
        setting = next((s for s in UNSUPPORTED_HYDRA_SETTINGS if key == s or key.startswith(s + ".")), None)
        if setting is not None:
            raise UserError(key, f"is not supported: {UNSUPPORTED_HYDRA_SETTINGS[setting]}")
        check_hydra_field(override)
    removed = next((o for o in overrides.all if _removes_the_launcher(o)), None)
    if removed is not None:
        raise UserError(
            removed,
            "the launcher cannot be removed: every job runs through one; choose it with hydra/launcher=basic (the "
            "default), submitit_local, submitit_slurm or slurm_ddp",
        )
    multirun = args.multirun or any(o.startswith("hydra/launcher=") for o in overrides.all)
    if multirun and not args.multirun:
        print("note: a hydra/launcher override only acts in multirun; running with --multirun", file=sys.stderr)
    if multirun and under_torchrun() and (processes := torchrun_number("WORLD_SIZE")) > 1:
        raise UserError(
            "--multirun",
            f"under torchrun each of its {processes} processes would run the whole sweep on its own; "
            "start torchrun once per job, or sweep with -m and hydra/launcher=submitit_local (or slurm_ddp) and "
            "hydra.launcher.tasks_per_node set to the processes of each job",
        )
    if len(overrides.combinations) > 1 and not multirun:
        raise UserError(
            "command line",
            f"overrides {', '.join(overrides.swept_keys)} list several values; add -m to sweep them (or quote a "
            "value that holds a comma: key='a,b')",
        )
    if multirun and len(overrides.combinations) > 1:
        _refuse_shared_job_folders(overrides.all)
    entry = read_entry(args.config_path)
    check_launcher_keys(entry, overrides.combinations)
    folders = resolved_folder_settings(entry, overrides.combinations[0])
    overrides = with_launcher_defaults(overrides, entry)
    PREPARED.clear()
    configs = [
        prepare(entry, combination, overrides, resolve_metadata=not args.cfg) for combination in overrides.combinations
    ]
    for combination, config in zip(overrides.combinations, configs):
        check_tasks(entry, combination, config)
        if config.global_training.distributed:
            refuse_partial_torchrun_variables(config.global_training.world_size)
    _refuse_repeated_jobs(overrides.combinations, configs)
    if multirun:
        _refuse_job_names_that_cannot_name_files(overrides, configs)
    for warning in _jobs_warnings(overrides.combinations, configs) if this_rank() == 0 else ():  # ranks would repeat
        print(f"warning: {warning}", file=sys.stderr)
    if args.cfg:
        check_chosen_folder(folders, multirun)
        first = configs[0]
        if multirun:  # as the sweep's first job trains it
            swept = swept_values(tuple(overrides.combinations[0]), set(overrides.unswept_keys))
            first = replace(first, model_name=sweep_model_name(first.model_name, swept))
        print(OmegaConf.to_yaml(asdict(first)), end="")
        return 0
    rank_settings = hydra_settings_of_this_rank()
    if not multirun:
        settings = rank_settings or run_folder_settings(folders)
        _run_jobs(entry, overrides, False, Path.cwd() / "multirun", settings)  # a single run has no sweep folder
        return 0
    sweep_dir = sweep_folder(folders)
    with sweep_folder_held(sweep_dir):
        try:
            _run_jobs(entry, overrides, True, sweep_dir, rank_settings)
        except SystemExit as ended:  # Hydra printed why (e.g. a launcher whose job died without a result)
            if not ended.code:
                raise
            summarized = report_sweep(sweep_dir)
            if summarized in (1, 2):  # a job that failed outweighs one that stopped
                return summarized
            return ended.code if isinstance(ended.code, int) else 1
        return report_sweep(sweep_dir)


def _run_jobs(entry: TrainEntry, overrides: Overrides, multirun: bool, sweep_dir: Path, settings: tuple) -> None:
    prepare_slurm_launcher(overrides.all)
    try:
        run_hydra(entry, overrides, multirun, sweep_dir, train_task, settings + start_sweep())
    except SubmissionRefused as refused:
        raise refused.error from None


def _removes_the_launcher(override: str) -> bool:
    key, equals, value = override.partition("=")
    if key.startswith("~"):
        return key[1:] in ("hydra/launcher", "hydra.launcher")
    return key.lstrip("+") == "hydra.launcher" and value.strip() in ("null", "~", "")


JOB_UNIQUE_KEYS = ("hydra.job.num", "hydra.job.id", "hydra.job.override_dirname")


def _refuse_shared_job_folders(overrides: list[str]) -> None:
    """A hydra.sweep.subdir that names no per-job value puts every job's record (result.json, train.log) in one
    folder, where they overwrite each other and the sweep summary loses jobs."""
    chosen = last_value(overrides, "hydra.sweep.subdir")
    if chosen is not None and ".." in Path(chosen).parts:
        raise UserError("hydra.sweep.subdir", f"{chosen!r} holds '..', which can lead the jobs' folders into one")
    if chosen is not None and not any(key in chosen for key in JOB_UNIQUE_KEYS):
        raise UserError(
            "hydra.sweep.subdir",
            f"{chosen!r} would be the same folder for every job of the sweep, whose records (result.json, "
            "train.log) would overwrite each other; include ${hydra.job.num} (Hydra's default) or "
            "${hydra.job.override_dirname}",
        )


def _jobs_warnings(combinations: list[list[str]], configs: list[TrainConfig]) -> list[str]:
    """Each job's config warnings once; in a sweep, one that not every job gets names the jobs it holds for."""
    held = {}
    for combination, config in zip(combinations, configs):
        for warning in config_warnings(config):
            held.setdefault(warning, []).append(" ".join(combination))
    return [
        warning
        if len(jobs) == len(configs)
        else f"{warning} ({'job' if len(jobs) == 1 else 'jobs'} with overrides {'; '.join(jobs)})"
        for warning, jobs in held.items()
    ]


def _refuse_repeated_jobs(combinations: list[list[str]], configs: list[TrainConfig]) -> None:
    """Two jobs of one config would train one model name twice, the second overwriting the first."""
    seen: dict[str, list[str]] = {}
    for combination, config in zip(combinations, configs):
        key = json.dumps(asdict(config), sort_keys=True, default=str)
        if key in seen:
            raise UserError(
                "command line",
                f"the jobs with overrides {' '.join(seen[key])} and {' '.join(combination)} are one run (the same "
                "config and model name; the second would overwrite the first): remove the repeated value, or the "
                "override that sets what the swept values differ in",
            )
        seen[key] = combination


def _refuse_job_names_that_cannot_name_files(overrides: Overrides, configs: list[TrainConfig]) -> None:
    """A sweep job's model name carries its swept values (sweep_model_name), which may make it too long."""
    for combination, config in zip(overrides.combinations, configs):
        swept = swept_values(tuple(combination), set(overrides.unswept_keys))
        name = sweep_model_name(config.model_name, swept)
        problems = ProblemList()
        check_file_stems(replace(config, model_name=name), problems)
        if problems.problems:
            first = problems.problems[0]
            raise UserError(
                first.where,
                f"{first.problem} (the job sweeping {' '.join(f'{key}={value}' for key, value in swept)} is named "
                f"{name[:40]!r}...: the model name followed by the job's swept values)",
            )


def command_overrides(args: argparse.Namespace) -> list[str]:
    """The trailing path=value overrides plus the flags that stand for config fields (a flag and an override of
    the same field are refused: one would silently win)."""
    overrides = list(args.overrides)
    overridden = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    flags = (
        ("--model-name", "model_name", _literal(args.model_name) if args.model_name else None),
        ("--seed", "seed", args.seed),
        ("--skip-metadata", "skip_metadata", "true" if args.skip_metadata else None),
    )
    for flag, field, value in flags:
        if value is None:
            continue
        if field in overridden:
            raise UserError(flag, f"sets {field}, which an override sets too; give one of them")
        overrides.append(f"{field}={value}")
    return overrides


def _literal(value: str) -> str:
    """A flag's value as an override value that Hydra and OmegaConf take as written (no sweep, no interpolation)."""
    return hydra_quoted(value.replace("${", "\\${"))


@timed("config")
def prepare(entry: TrainEntry, combination: list[str], overrides: Overrides, resolve_metadata: bool) -> TrainConfig:
    """Compose, validate and (unless skipped) check and resolve one job; its RunSpec waits in PREPARED."""
    try:
        config = canonical_config(compose_entry(entry, combination))
        if resolve_metadata and not config.skip_metadata:
            spec = supported_spec(config, run_dir=Path("."))
            if spawns_its_processes(combination, config):
                from sequifier.distributed.sharding import check_shares  # torch

                check_shares(spec, config.global_training.world_size)
            PREPARED[tuple(combination)] = spec
        return config
    except UserError as error:
        if len(overrides.combinations) > 1:
            error.args = (f"{error} (job with overrides {' '.join(combination)})",)
        raise


def spawns_its_processes(combination: list[str], config: TrainConfig) -> bool:
    """A distributed job that starts its `world_size` processes itself: not a rank of torchrun or of a Submitit
    job's tasks, whose number the launcher decides."""
    return (
        config.global_training.distributed and chosen_launcher(combination) in (None, "basic") and not under_torchrun()
    )


def supported_spec(config: TrainConfig, run_dir: Path) -> RunSpec:
    """The RunSpec of a valid config that this machine can run (checking that imports torch)."""
    from sequifier.training.capabilities import check_supported

    check_supported(config)
    return resolve(config, run_dir=run_dir)


def train_task(cfg: DictConfig) -> dict[str, Any]:
    """Hydra's task: the job's RunSpec -> launch. A failing job of a sweep is reported and the sweep goes on."""
    job = current_job()
    name = sweep_model_name(str(cfg.model_name), job.swept) if job.multirun else str(cfg.model_name)
    result: dict[str, Any] = {
        "job": job.number,
        "overrides": list(job.overrides),
        "swept": job.override_dirname,
        "model_name": name,
    }
    try:
        from sequifier.distributed.launch import launch  # torch and the engine

        started = time.perf_counter()
        outcome = launch(job_spec(cfg, job, name))
        if outcome.log_folders:  # rank 0 (other ranks of a torchrun job write and print nothing)
            print(run_summary(outcome, time.perf_counter() - started))
        result.update(
            status="ok",
            monitored_loss=outcome.monitored_loss,
            best_epoch=outcome.best_epoch,
            validation=outcome.final_validation,
            exported=outcome.exported,
            log_folders=list(outcome.log_folders),
        )
    except StopRequested as stopped:
        not_requeued = in_submitit_job() and not requeued_after_stop()
        resumable = f"resumable from the latest checkpoint {stopped} with global_training.resume.policy=if_exists"
        result.update(status="stopped", error=f"stopped; {resumable}")
        if this_rank() == 0:
            print(f"stopped on request; the latest checkpoint is {stopped}; resume with "
                  "global_training.resume.policy=if_exists", file=sys.stderr)  # fmt: skip
            if job.multirun:
                write_result(job, result)
        if not_requeued:  # the Submitit job ends with this result, which the sweep summary reports
            return result
        raise SystemExit(STOPPED_EXIT_CODE) from None
    except (UserError, OSError) as error:
        problem = error if isinstance(error, UserError) else file_system_error(error, WRITTEN_BEFORE_IS_KEPT)
        if not job.multirun:
            print(error_lines(problem), file=sys.stderr)
            remove_unused_record(job.run_dir)
            raise SystemExit(problem.exit_code) from None
        result.update(status="failed", error=str(problem), user_error=problem.exit_code == UserError.exit_code)
    except Exception as error:
        if not job.multirun:
            raise
        logger.error("job failed:\n%s", traceback.format_exc())
        result.update(status="failed", error=f"{type(error).__name__}: {error}")
    if this_rank() != 0:  # the other tasks of a multi-task job trained the same run; rank 0 reports it
        _record_rank_failure(job, result)
        return result
    try:
        write_result(job, result)
    except OSError as error:
        problem = file_system_error(error, "the run's record of its result is missing; its models are exported")
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(problem.exit_code) from None
    return result


def _record_rank_failure(job: HydraJob, result: dict[str, Any]) -> None:
    """A rank's own error, for the sweep report: rank 0 may only see that this rank left the group."""
    if result.get("status") != "failed":
        return
    logger.error("rank %d failed: %s", this_rank(), result["error"])
    try:
        write_rank_result(job, this_rank(), result)
    except OSError as error:
        logger.error("rank %d could not record its error: %s", this_rank(), file_system_error(error))


@timed("config")
def job_spec(cfg: DictConfig, job: HydraJob, model_name: str) -> RunSpec:
    """The prepared RunSpec of this job, or (in another process, or with --skip-metadata) one resolved now."""
    spec = PREPARED.get(job.overrides)
    if spec is None:
        spec = supported_spec(canonical_config(OmegaConf.to_container(cfg, resolve=True)), run_dir=job.run_dir)
    return replace(spec, run_dir=job.run_dir, model_name=model_name, config=replace(spec.config, model_name=model_name))
