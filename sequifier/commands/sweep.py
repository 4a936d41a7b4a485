"""Hydra jobs of `sequifier train`: where a job runs, its model name in a sweep, its result file, the sweep report."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sequifier.atomic import write_text_atomic
from sequifier.training.curves import SWEEP_FILE, draw_sweep
from sequifier.training.stop import STOPPED_EXIT_CODE

RESULT_FILE = "result.json"
RANK_RESULT_FILE = "result-rank{rank}.json"  # a failed rank's own result, rank 0's being the job's
SUMMARY_FILE = "summary.txt"
SUMMARY_HEADING = "sweep summary "
# Set by the command for its jobs (launchers' processes inherit it): a sweep folder used again reports this sweep only.
SWEEP_ID_VARIABLE = "SEQUIFIER_SWEEP_ID"


def start_sweep() -> tuple[str, ...]:
    """A fresh sweep id for this command, and the Hydra setting that hands it to every job wherever it runs."""
    os.environ[SWEEP_ID_VARIABLE] = uuid.uuid4().hex
    return (f"+hydra.job.env_set.{SWEEP_ID_VARIABLE}={os.environ[SWEEP_ID_VARIABLE]}",)


@dataclass(frozen=True)
class HydraJob:
    """The running job as Hydra describes it."""

    number: int
    run_dir: Path
    multirun: bool
    overrides: tuple[str, ...]
    override_dirname: str
    swept: tuple[tuple[str, str], ...]  # the swept keys and their values as written, unquoted


def current_job() -> HydraJob:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_config = HydraConfig.get()
    task = tuple(hydra_config.overrides.task)
    return HydraJob(
        number=hydra_config.job.get("num", 0),
        run_dir=Path(hydra_config.runtime.output_dir),
        multirun=hydra_config.mode == RunMode.MULTIRUN,
        overrides=task,
        override_dirname=hydra_config.job.override_dirname,
        swept=swept_values(task, set(hydra_config.job.config.override_dirname.exclude_keys)),
    )


def swept_values(task_overrides: tuple[str, ...], excluded: set[str]) -> tuple[tuple[str, str], ...]:
    """(key, value) of the job's overrides that are not `excluded` (the sweep leaves out the keys it does not
    sweep), in Hydra's override_dirname order; a string value as it reads (without quotes or escapes), other values
    as written. Parsed with Hydra's grammar: a value may hold the commas and '=' that override_dirname joins items
    with."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    pairs = []
    for override in sorted(OverridesParser.create().parse_overrides(list(task_overrides)), key=lambda o: o.input_line):
        if override.key_or_group in excluded:
            continue
        text = override.input_line.split("=", 1)[1] if "=" in override.input_line else ""
        value = override.value()
        if isinstance(value, str):  # unquoted and unescaped (Hydra's sweeper writes a:b as a\:b)
            text = value
        pairs.append((override.key_or_group, text))
    return tuple(pairs)


def sweep_model_name(model_name: str, swept: tuple[tuple[str, str], ...]) -> str:
    """A model name unique to a sweep job: the base name plus the job's swept values."""
    if not swept:
        return model_name
    last_names = [key.split(".")[-1] for key, _ in swept]
    unique = len(set(last_names)) == len(last_names)
    parts = [
        f"{(short if unique else key).replace('/', '_')}={_as_file_name(value)}"
        for (key, value), short in zip(swept, last_names)
    ]
    return model_name + "-" + "-".join(parts)


def _as_file_name(value: str) -> str:
    """A swept value as part of a file name, percent-encoded so that two values never give one name."""
    return value.replace("%", "%25").replace("/", "%2F").replace("\\", "%5C")


def write_result(job: HydraJob, result: dict[str, Any]) -> None:
    result = {**result, "sweep_id": os.environ.get(SWEEP_ID_VARIABLE)}
    write_text_atomic(job.run_dir / RESULT_FILE, json.dumps(result, indent=2))


def write_rank_result(job: HydraJob, rank: int, result: dict[str, Any]) -> None:
    """The result of a rank other than 0 of a multi-task job, beside the job's result.json."""
    result = {**result, "rank": rank, "sweep_id": os.environ.get(SWEEP_ID_VARIABLE)}
    write_text_atomic(job.run_dir / RANK_RESULT_FILE.format(rank=rank), json.dumps(result, indent=2))


def read_results(sweep_dir: Path) -> list[dict[str, Any]]:
    """The result of every job of the sweep this command ran, in job order (an earlier sweep's stay out, and any
    other file of that name)."""
    found = [(p, read_record(p)) for p in sweep_dir.rglob(RESULT_FILE)]
    sweep_id = os.environ.get(SWEEP_ID_VARIABLE)
    ours = [with_a_ranks_error(p, r) for p, r in found if r is not None and r.get("sweep_id") == sweep_id]
    return sorted(ours, key=lambda r: r.get("job", 0))


def read_record(path: Path) -> dict[str, Any] | None:
    """A job's result as sequifier wrote it; None for a file of that name that is none (a user's own)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and {"status", "sweep_id"} <= record.keys() else None


def foreign_record_files(folder: Path) -> list[Path]:
    """Files in `folder` that a run's or sweep's record would replace but that sequifier did not write."""
    result, summary = folder / RESULT_FILE, folder / SUMMARY_FILE
    foreign = [result] if result.is_file() and read_record(result) is None else []
    if summary.is_file():
        try:
            ours = summary.read_text(encoding="utf-8").startswith(SUMMARY_HEADING)
        except (OSError, ValueError):
            ours = False
        foreign += [] if ours else [summary]
    return foreign


def with_a_ranks_error(path: Path, result: dict[str, Any]) -> dict[str, Any]:
    """A failed job's result with the configuration or data error of the rank that had one, as the job's
    result.json too: rank 0 of a multi-task job may only have seen its peer leave ("Connection closed by peer")."""
    if result.get("status") != "failed" or result.get("user_error"):
        return result
    ranks = [json.loads(p.read_text()) for p in path.parent.glob(RANK_RESULT_FILE.format(rank="*"))]
    failed = [r for r in ranks if r.get("sweep_id") == result.get("sweep_id") and r.get("user_error")]
    if not failed:
        return result
    first = min(failed, key=lambda r: r["rank"])
    result = {**result, "error": f"{first['error']} (rank {first['rank']})", "user_error": True}
    write_text_atomic(path, json.dumps(result, indent=2))
    return result


def summary_table(results: list[dict[str, Any]], sweep_dir: Path) -> str:
    """One line per job with its monitored loss (and the error of a failed job)."""
    lines = [
        f"{SUMMARY_HEADING}({sweep_dir}):",
        f"{'job':>4}  {'status':<7} {'monitored loss':>14}  model_name / overrides",
    ]
    for result in results:
        loss = result.get("monitored_loss")
        shown = f"{loss:.4f}" if isinstance(loss, (int, float)) else "-"
        overrides = " ".join(result.get("overrides", []))
        lines.append(
            f"{result.get('job', '?'):>4}  {result.get('status', '?'):<7} {shown:>14}  "
            f"{result.get('model_name')}  {overrides}"
        )
        if result.get("status") != "ok":
            lines.append(f"      {result.get('error', '')}")
    if not results:
        lines.append(f"      no job results ({RESULT_FILE}) under {sweep_dir}")
    return "\n".join(lines)


def report_sweep(sweep_dir: Path) -> int:
    """Print the summary table and leave it, with sweep.png of the jobs' validation curves, in the sweep folder.

    Returns the exit code of `sweep_exit_code`: 1 when a job failed or none reported.
    """
    results = read_results(sweep_dir)
    table = summary_table(results, sweep_dir)
    print("\n" + table)
    if sweep_dir.is_dir():
        write_text_atomic(sweep_dir / SUMMARY_FILE, table + "\n")
        jobs = [
            (r.get("swept") or r["model_name"], r.get("log_folders", [])) for r in results if r.get("status") == "ok"
        ]
        if jobs:
            print(f"sweep curves: {draw_sweep(jobs, sweep_dir / SWEEP_FILE)}")
    return sweep_exit_code(results)


def sweep_exit_code(results: list[dict[str, Any]]) -> int:
    """0 when every job is ok; 1 when none reported or a job failed unexpectedly; 2 when the failed jobs all failed
    on a configuration or data error; STOPPED_EXIT_CODE when the unfinished jobs all stopped (resumable)."""
    failed = [r for r in results if r.get("status") not in ("ok", "stopped")]
    if not results or any(not r.get("user_error") for r in failed):
        return 1
    if failed:
        return 2
    return STOPPED_EXIT_CODE if any(r.get("status") == "stopped" for r in results) else 0
