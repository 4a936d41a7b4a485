"""The Hydra layer of `sequifier train`: config FILE -> Hydra argv, pre-flight checks, the task function.

The user's file is composed on top of the schema defaults through a ConfigStore entry node
`{defaults: [schema, <file stem>, <groups: null>, _self_]}`, so user values win and
`group=option` overrides select presets shipped in pkg://sequifier.conf.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import traceback
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from sequifier.config.errors import UserError, did_you_mean
from sequifier.config.expand import expand_singletons
from sequifier.config.fragments import compose_file
from sequifier.config.schema import TrainConfig, hydra_defaults
from sequifier.config.validate import reject_historical, validate

ENTRY_NAME = "sequifier_train_entry"
SCHEMA_NAME = "sequifier_train_schema"
USER_NAME = "sequifier_user_config"
SEARCH_PATH = "hydra.searchpath=[pkg://sequifier.conf]"
RESULT_FILE = "result.json"
PLACED_GROUPS = ("dataset_training/",)  # presets that must name the dataset they apply to with @

logger = logging.getLogger("sequifier")


@dataclass(frozen=True)
class Overrides:
    """Command-line overrides split into what every job shares and what a sweep varies."""

    all: list[str]
    swept_keys: list[str]
    combinations: list[list[str]]


def parse_overrides(overrides: list[str]) -> Overrides:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as error:
        raise UserError("command line", str(error).splitlines()[0]) from None
    choices, swept = [], []
    for override in parsed:
        if override.is_sweep_override():
            key = override.get_key_element()
            swept.append(override.key_or_group)
            choices.append([f"{key}={value}" for value in override.sweep_string_iterator()])
        else:
            choices.append([override.input_line])
    return Overrides(list(overrides), swept, [list(c) for c in itertools.product(*choices)])


def config_groups() -> list[str]:
    """Group names (`model/backbone`, ...) of every folder of presets in pkg://sequifier.conf."""
    root = resources.files("sequifier.conf")
    groups = []

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir() and not child.name.startswith("__"):
                name = f"{prefix}{child.name}"
                if any(c.name.endswith(".yaml") for c in child.iterdir()):
                    groups.append(name)
                walk(child, name + "/")

    walk(root, "")
    return sorted(groups)


def register_entry(config_file: Path) -> None:
    """Store the schema defaults, the user's composed file and the entry node that orders them."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    store.store(name=SCHEMA_NAME, node=hydra_defaults())
    store.store(name=USER_NAME, node=compose_file(config_file))
    defaults: list[Any] = [SCHEMA_NAME, USER_NAME]
    defaults += [{group: None} for group in config_groups() if not group.startswith(("hydra/",) + PLACED_GROUPS)]
    defaults.append("_self_")
    store.store(name=ENTRY_NAME, node={"defaults": defaults})


def compose_config(config_file: Path, overrides: list[str]) -> dict[str, Any]:
    """Compose file + overrides with Hydra's compose API into plain data (no run directory)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    register_entry(config_file)
    _check_placed_presets(overrides)
    try:
        with initialize_config_dir(version_base="1.3", config_dir=str(config_file.parent.resolve()), job_name="train"):
            if overrides:
                selections = [o for o in overrides if "/" in o.split("=", 1)[0]]
                _check_override_keys(compose(config_name=ENTRY_NAME, overrides=selections + [SEARCH_PATH]), overrides)
            composed = compose(config_name=ENTRY_NAME, overrides=overrides + [SEARCH_PATH])
            return OmegaConf.to_container(composed, resolve=True)
    except (HydraException, OmegaConfBaseException) as error:
        raise UserError(str(config_file), " ".join(str(error).split())) from None


def _check_placed_presets(overrides: list[str]) -> None:
    for override in overrides:
        group, _, option = override.lstrip("+").partition("=")
        if group.startswith(PLACED_GROUPS) and "@" not in group:
            raise UserError(group, f"a dataset preset needs the dataset it applies to: +{group}@dataset.freeze={option} (singleton file) "
                                   f"or +{group}@dataset_training.<name>.freeze={option}")


def _check_override_keys(base: DictConfig, overrides: list[str]) -> None:
    """An override of a field that is not there names it, with a did-you-mean, instead of Hydra's trace."""
    data = OmegaConf.to_container(base, resolve=False)
    for override in overrides:
        key = override.split("=", 1)[0]
        if key.startswith(("+", "~")) or "/" in key or key.startswith("hydra.") or "=" not in override:
            continue
        node: Any = data
        walked = []
        for part in key.split("."):
            if not isinstance(node, dict):
                break
            if part not in node:
                where = ".".join(walked + [part])
                raise UserError(where, "unknown field" + did_you_mean(part, [str(k) for k in node]) + f"; to add a new field write +{key}=...")
            walked.append(part)
            node = node[part]


def canonical_config(data: dict[str, Any]) -> TrainConfig:
    reject_historical(data)
    return validate(expand_singletons(data))


def preflight(config_file: Path, overrides: Overrides, resolve_metadata: bool = True) -> list[tuple[list[str], TrainConfig]]:
    """Compose, expand, validate and resolve every job of the command before any job starts."""
    from sequifier.config.resolve import resolve
    from sequifier.training.capabilities import check_supported

    checked = []
    for combination in overrides.combinations:
        try:
            config = canonical_config(compose_config(config_file, combination))
            if resolve_metadata and not config.skip_metadata:
                resolve(config, run_dir=Path("."))
                check_supported(config)
        except UserError as error:
            if len(overrides.combinations) > 1:
                error.args = (f"{error} (job with overrides {' '.join(combination)})",)
            raise
        checked.append((combination, config))
    return checked


def run_hydra(config_file: Path, overrides: Overrides, multirun: bool, sweep_dir: Path) -> None:
    """Hand the command to hydra.main; each job enters `train_task`."""
    import hydra

    register_entry(config_file)
    argv = ["sequifier-train", "--config-name", ENTRY_NAME]
    if multirun:
        argv.append("--multirun")
    excluded = sorted({o.split("=", 1)[0].lstrip("+~") for o in overrides.all} - set(overrides.swept_keys))
    argv += [
        SEARCH_PATH,
        "hydra.job.name=train",
        f"hydra.sweep.dir={sweep_dir}",
        "hydra.job.config.override_dirname.exclude_keys=[" + ",".join(excluded) + "]",
    ]
    argv += overrides.all
    saved = sys.argv
    sys.argv = argv
    try:
        hydra.main(version_base="1.3", config_path=None)(train_task)()
    finally:
        sys.argv = saved


def sweep_model_name(model_name: str, override_dirname: str) -> str:
    """A model name unique to a sweep job: the base name plus the job's swept values."""
    if not override_dirname:
        return model_name
    pairs = [item.split("=", 1) for item in override_dirname.split(",")]
    last_names = [key.lstrip("+~").split(".")[-1] for key, _ in pairs]
    unique = len(set(last_names)) == len(last_names)
    parts = [f"{short if unique else key.lstrip('+~')}={value}" for (key, value), short in zip(pairs, last_names)]
    return (model_name + "-" + "-".join(parts)).replace("/", "_")


def train_task(cfg: DictConfig) -> dict[str, Any] | None:
    """Hydra task: canonical config -> RunSpec -> launch. Multirun jobs report failures and let the sweep go on."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_config = HydraConfig.get()
    run_dir = Path(hydra_config.runtime.output_dir)
    multirun = hydra_config.mode == RunMode.MULTIRUN
    data = OmegaConf.to_container(cfg, resolve=True)
    if multirun:
        data["model_name"] = sweep_model_name(str(data.get("model_name")), hydra_config.job.override_dirname)
    result: dict[str, Any] = {"job": hydra_config.job.get("num", 0), "overrides": list(hydra_config.overrides.task), "model_name": data.get("model_name")}
    try:
        result.update(_train(data, run_dir))
        result["status"] = "ok"
    except UserError as error:
        if not multirun:
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(error.exit_code)
        result.update(status="failed", error=str(error))
    except Exception as error:
        if not multirun:
            raise
        logger.error("job failed:\n%s", traceback.format_exc())
        result.update(status="failed", error=f"{type(error).__name__}: {error}")
    (run_dir / RESULT_FILE).write_text(json.dumps(result, indent=2))
    return result


def _train(data: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    from sequifier.config.resolve import resolve
    from sequifier.distributed.launch import launch
    from sequifier.training.capabilities import check_supported

    config = canonical_config(data)
    check_supported(config)
    spec = resolve(config, run_dir)
    outcome = launch(spec)
    return {"monitored_loss": outcome.monitored_loss, "best_epoch": outcome.best_epoch, "validation": outcome.final_validation, "exported": outcome.exported}


def read_sweep_results(sweep_dir: Path) -> list[dict[str, Any]]:
    """The result of every job of a finished sweep, in job order."""
    results = [json.loads(p.read_text()) for p in sweep_dir.glob(f"*/{RESULT_FILE}")]
    return sorted(results, key=lambda r: r.get("job", 0))
