"""Hydra jobs of `sequifier train`: where a job runs, its model name in a sweep, its result file, the summary table."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sequifier.atomic import write_text_atomic

RESULT_FILE = "result.json"


@dataclass(frozen=True)
class HydraJob:
    """The running job as Hydra describes it."""

    number: int
    run_dir: Path
    multirun: bool
    overrides: tuple[str, ...]
    override_dirname: str


def current_job() -> HydraJob:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_config = HydraConfig.get()
    return HydraJob(
        number=hydra_config.job.get("num", 0),
        run_dir=Path(hydra_config.runtime.output_dir),
        multirun=hydra_config.mode == RunMode.MULTIRUN,
        overrides=tuple(hydra_config.overrides.task),
        override_dirname=hydra_config.job.override_dirname,
    )


def sweep_model_name(model_name: str, override_dirname: str) -> str:
    """A model name unique to a sweep job: the base name plus the job's swept values."""
    if not override_dirname:
        return model_name
    pairs = [item.split("=", 1) for item in override_dirname.split(",")]
    last_names = [key.lstrip("+~").split(".")[-1] for key, _ in pairs]
    unique = len(set(last_names)) == len(last_names)
    parts = [f"{short if unique else key.lstrip('+~')}={value}" for (key, value), short in zip(pairs, last_names)]
    return (model_name + "-" + "-".join(parts)).replace("/", "_")


def write_result(job: HydraJob, result: dict[str, Any]) -> None:
    write_text_atomic(job.run_dir / RESULT_FILE, json.dumps(result, indent=2))


def read_results(sweep_dir: Path) -> list[dict[str, Any]]:
    """The result of every job of a finished sweep, in job order."""
    results = [json.loads(p.read_text()) for p in sweep_dir.glob(f"*/{RESULT_FILE}")]
    return sorted(results, key=lambda r: r.get("job", 0))


def print_summary(results: list[dict[str, Any]], sweep_dir: Path) -> int:
    """One line per job with its monitored loss; exit code 1 when a job failed."""
    print(f"\nsweep summary ({sweep_dir}):")
    print(f"{'job':>4}  {'status':<7} {'monitored loss':>14}  model_name / overrides")
    for result in results:
        loss = result.get("monitored_loss")
        shown = f"{loss:.4f}" if isinstance(loss, (int, float)) else "-"
        overrides = " ".join(result.get("overrides", []))
        print(
            f"{result.get('job', '?'):>4}  {result.get('status', '?'):<7} {shown:>14}  "
            f"{result.get('model_name')}  {overrides}"
        )
        if result.get("status") != "ok":
            print(f"      {result.get('error', '')}")
    return 0 if results and all(r.get("status") == "ok" for r in results) else 1
