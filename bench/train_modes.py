"""Whole-process `sequifier train` in several precision and compile modes: wall time, epochs, tokens/s, loss.

    .venv/bin/python bench/train_modes.py [--windows 4000] [--epochs 3] [--repeats 2] [--dropout 0.1 0]
        [--modes eager auto bf16 outer outer-warm inner inner-warm bf16-outer] [--workdir DIR]
    .venv/bin/python bench/train_modes.py --demo [--repeats 2] [--modes eager bf16]
    python bench/train_modes.py --override device=cuda --modes auto loop eager bf16-outer

The seed-shaped model and pt data of `bench/train_against_reference.py` (its functions build both), trained
from process start to the exported ONNX model once per mode and repeat; modes alternate within each repeat,
so load from other processes falls on all of them alike. Modes:
  eager        float32, no compilation (global_training.autocast=null)
  auto         the defaults: autocast auto (bf16 where the CPU computes it natively), no compilation
  bf16         global_training.autocast=bf16
  outer/inner  float32 with global_training.torch_compile=outer/inner, with an empty inductor cache
  outer-warm   the same again on the cache its cold run of this repeat just filled (a second identical run)
  bf16-outer   autocast bf16 and torch_compile outer, cold cache
  ahead        the defaults with global_training.num_workers=1 (the next batch gathered while this one trains)
  loop         the defaults with num_workers=0 (each batch gathered in the loop; the CPU's default)
  eager-ahead  float32 with num_workers=1
`--override` adds config overrides to every run (e.g. device=cuda).
Per run: the whole-process wall time, each epoch's training seconds (views / the logged samples/s),
the first step's compile time (logged by compiled runs), tokens/s (samples/s x context length over the
steady epochs 2.., epoch 1 when there is one) and the final validation loss. `10-epoch s` extrapolates
the whole process to ten epochs: the run's wall time plus the missing epochs at the steady epoch-to-epoch
time (training, validation and checkpoint), taken from the log's validation timestamps.

`--demo` trains the project of `sequifier make demo --demo` (as `make demo` does) instead.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import tempfile
from datetime import datetime
from pathlib import Path

import yaml
from train_against_reference import CONTEXT, OURS, measured, prepare_data, train_config, write_yaml

MODES = {
    "eager": {"autocast": None},
    "auto": {},
    "bf16": {"autocast": "bf16"},
    "outer": {"torch_compile": "outer", "autocast": None},
    "outer-warm": {"torch_compile": "outer", "autocast": None},
    "inner": {"torch_compile": "inner", "autocast": None},
    "inner-warm": {"torch_compile": "inner", "autocast": None},
    "bf16-outer": {"autocast": "bf16", "torch_compile": "outer"},
    "ahead": {"num_workers": 1},
    "loop": {"num_workers": 0},
    "eager-ahead": {"autocast": None, "num_workers": 1},
}
EPOCH_RATE = re.compile(r"INFO epoch (\d+): (\d+) samples/s")
VIEWS = re.compile(r"training views \S+: (\d+)")
COMPILE = re.compile(r"first training step \(compiling forward and backward\) took ([\d.]+) s")
VALIDATED = re.compile(r"^(\S+ \S+) INFO epoch \d+ validation loss", re.MULTILINE)


def log_figures(log: str) -> dict:
    """Epoch seconds, steady samples/s, compile seconds and the validation times of one run's log."""
    rates = [int(rate) for _, rate in EPOCH_RATE.findall(log)]
    views = int(VIEWS.search(log).group(1))
    steady = rates[1:] or rates
    compiled = COMPILE.search(log)
    stamps = [datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f") for s in VALIDATED.findall(log)]
    cycles = [(later - earlier).total_seconds() for earlier, later in zip(stamps, stamps[1:])]
    return {
        "epoch_s": [views / rate for rate in rates],
        "samples_per_s": statistics.mean(steady),
        "compile_s": float(compiled.group(1)) if compiled else 0.0,
        "cycle_s": statistics.mean(cycles) if cycles else None,
    }


def final_validation(metrics: Path, target: str) -> float:
    with metrics.open() as file:
        rows = [r for r in csv.DictReader(file) if r["target"] == target and r["metric"] == "loss"]
    return float(max(rows, key=lambda r: int(r["epoch"]))["value"])


def run_mode(project: Path, config: Path, model: str, overrides: list[str], cache: Path) -> dict:
    command = [str(OURS), "train", "--config-path", str(config), f"model_name={model}", *overrides]
    result = measured(["env", f"TORCHINDUCTOR_CACHE_DIR={cache}", *command], project)
    figures = log_figures((project / "logs" / model / f"{model}.log").read_text())
    return {**result, **figures, "logs": project / "logs" / model}


def spread(values: list[float], digits: int = 1) -> str:
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if round(low, digits) == round(high, digits) else f"{low:.{digits}f}-{high:.{digits}f}"


def report(title: str, runs: dict[str, list[dict]], epochs: int, context: int, targets: list[str]) -> None:
    print(f"\n{title}: min-max over {len(next(iter(runs.values())))} repeats")
    header = ["mode", "wall s", "epoch 1 s", "later epoch s", "compile s", "tokens/s", "10-epoch s"]
    print(" | ".join(header + [f"val loss {t}" for t in targets]))
    for mode, results in runs.items():
        later = [statistics.mean(r["epoch_s"][1:]) for r in results if len(r["epoch_s"]) > 1]
        ten = [r["wall"] + (10 - epochs) * r["cycle_s"] for r in results if r["cycle_s"]]
        cells = [
            mode,
            spread([r["wall"] for r in results]),
            spread([r["epoch_s"][0] for r in results]),
            spread(later) if later else "-",
            spread([r["compile_s"] for r in results]),
            spread([r["samples_per_s"] * context for r in results], 0),
            spread(ten, 0) if ten else "-",
        ]
        for target in targets:
            cells.append(spread([final_validation(r["logs"] / "validation-metrics.csv", target) for r in results], 4))
        print(" | ".join(cells))


def alternate(
    project: Path, configs: dict[str, Path], repeats: int, prefix: str, caches: Path, overrides: list[str]
) -> dict:
    """Every mode once per repeat, in order; `-warm` modes reuse their cold mode's cache of the same repeat."""
    runs: dict[str, list[dict]] = {mode: [] for mode in configs}
    for repeat in range(repeats):
        for mode, config in configs.items():
            cache = caches / f"{repeat}-{mode.removesuffix('-warm')}"
            result = run_mode(project, config, f"{prefix}-{mode}-{repeat}", overrides, cache)
            runs[mode].append(result)
            print(
                f"repeat {repeat + 1} {mode}: {result['wall']:.1f} s, epochs "
                + ", ".join(f"{s:.1f}" for s in result["epoch_s"])
                + f" s, compile {result['compile_s']:.1f} s",
                flush=True,
            )
    return runs


def mode_config(base: dict, mode: str) -> dict:
    config = yaml.safe_load(yaml.safe_dump(base))
    config["global_training"].update(MODES[mode])
    return config


def seed_shaped(args: argparse.Namespace, workdir: Path) -> None:
    project = prepare_data(workdir, args.windows)
    for dropout in args.dropout:
        configs = {}
        for mode in args.modes:
            configs[mode] = project / "configs" / f"modes-{mode}-{dropout}.yaml"
            write_yaml(configs[mode], mode_config(train_config(args.epochs, dropout), mode))
        runs = alternate(project, configs, args.repeats, f"d{dropout}", workdir / "inductor", args.override)
        report(f"seed-shaped, dropout {dropout}, {args.epochs} epochs", runs, args.epochs, CONTEXT, ["aggregate"])


def demo(args: argparse.Namespace, workdir: Path) -> None:
    project = workdir / "demo"
    workdir.mkdir(parents=True, exist_ok=True)
    measured([str(OURS), "make", str(project), "--demo"], workdir)
    measured([str(OURS), "preprocess", "--config-path", "configs/preprocess.yaml"], project)
    base = yaml.safe_load((project / "configs" / "train.yaml").read_text())
    configs = {}
    for mode in args.modes:
        configs[mode] = project / "configs" / f"modes-{mode}.yaml"
        write_yaml(configs[mode], mode_config(base, mode))
    runs = alternate(project, configs, args.repeats, "demo", workdir / "inductor", args.override)
    epochs, context = base["training_plan"]["epochs"], base["global_training"]["context_length"]
    report(f"demo, {epochs} epochs", runs, epochs, context, base["model"]["interface"]["target_columns"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", type=int, default=4000, help="about this many training windows")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dropout", type=float, nargs="+", default=[0.1, 0.0])
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=["eager", "bf16", "outer", "inner"])
    parser.add_argument("--demo", action="store_true", help="train the demo project instead")
    parser.add_argument("--override", nargs="*", default=[], help="config overrides of every run (KEY=VALUE)")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    for mode in args.modes:
        if mode.endswith("-warm") and mode.removesuffix("-warm") not in args.modes[: args.modes.index(mode)]:
            parser.error(f"{mode} reuses the cache of {mode.removesuffix('-warm')}: list that mode before it")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sequifier-modes-"))
    (demo if args.demo else seed_shaped)(args, workdir)


if __name__ == "__main__":
    main()
