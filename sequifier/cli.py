"""The `sequifier` command: argparse front for make, preprocess, train and infer."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sequifier.config.errors import UserError

DESCRIPTION = "Train transformer models on tabular event sequences: make -> preprocess -> train -> infer."


def _config_path(parser: argparse.ArgumentParser, command: str) -> None:
    parser.add_argument("--config-path", type=Path, default=Path(f"configs/{command}.yaml"),
                        help=f"YAML config file (default: configs/{command}.yaml)")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks for errors")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sequifier", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    make = commands.add_parser("make", help="create a project folder with starter configs")
    make.add_argument("name", help="folder to create")
    make.add_argument("--demo", action="store_true", help="also write a synthetic data set with a known loss floor")
    make.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    preprocess = commands.add_parser("preprocess", help="turn a CSV/Parquet table into stored training windows")
    _config_path(preprocess, "preprocess")
    preprocess.add_argument("--data-path", help="input file or folder, overriding preprocessing_data_path")
    preprocess.add_argument("--selected-columns", help="comma-separated columns to keep, overriding selected_columns")
    preprocess.add_argument("--randomize", action="store_true",
                            help="draw a fresh seed instead of the config's seed (it is printed and recorded in the metadata as `seed`)")

    train = commands.add_parser("train", help="train a model; trailing key=value overrides go to Hydra",
                                usage="sequifier train [--config-path F] [flags] [path=value ...]",
                                description="Train a model. Any config field can be overridden as path=value after the flags "
                                            "(+path=value adds a field, ~path removes one); -m sweeps comma-separated values.")
    _config_path(train, "train")
    train.add_argument("--model-name", help="override model_name")
    train.add_argument("--seed", type=int, help="override seed")
    train.add_argument("--skip-metadata", action="store_true", help="skip metadata checks before launching (jobs still read it), e.g. when submitting from a node without the data")
    train.add_argument("-m", "--multirun", action="store_true", help="run every combination of comma-separated override values as its own job")
    train.add_argument("--cfg", choices=["job"], help="print the expanded canonical config and exit")

    infer = commands.add_parser("infer", help="run an exported model over preprocessed data")
    _config_path(infer, "infer")
    infer.add_argument("--data-path", help="preprocessed split to infer on, overriding data_path")
    infer.add_argument("--model-path", help="model file (.onnx or .pt; a glob picks the newest), overriding model_path")
    seeding = infer.add_mutually_exclusive_group()
    seeding.add_argument("--seed", type=int, help="seed of sampling and inference-time dropout, overriding seed")
    seeding.add_argument("--randomize", action="store_true", help="draw a fresh seed (printed) instead of the configured one")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    flags = [e for e in extras if e.startswith("-")]
    if flags or (extras and args.command != "train"):
        parser.error(f"unrecognized arguments: {' '.join(flags or extras)}")
    args.overrides = extras
    try:
        if args.command == "make":
            from sequifier.project.scaffold import make_project

            make_project(Path(args.name), demo=args.demo)
        elif args.command == "preprocess":
            _preprocess(args)
        elif args.command == "train":
            return _train(args)
        elif args.command == "infer":
            from sequifier.infer.runner import run_inference

            run_inference(args.config_path, data_path=args.data_path, model_path=args.model_path, seed=args.seed, randomize=args.randomize)
    except UserError as error:
        if args.debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    return 0


def _preprocess(args: argparse.Namespace) -> None:
    from sequifier.config.preprocess import load_preprocess_config
    from sequifier.preprocess import run_preprocess

    columns = args.selected_columns.split(",") if args.selected_columns else None
    config = load_preprocess_config(args.config_path, data_path=args.data_path, selected_columns=columns, randomize=args.randomize)
    run_preprocess(config)


def _train(args: argparse.Namespace) -> int:
    from omegaconf import OmegaConf

    from sequifier.config import compose
    from sequifier.config.files import read_yaml_mapping
    from sequifier.config.validate_training import config_warnings

    overrides = list(args.overrides)
    if args.model_name:
        overrides.append(f"model_name={args.model_name}")
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    if args.skip_metadata:
        overrides.append("skip_metadata=true")
    multirun = args.multirun
    if not multirun and any(o.startswith("hydra/launcher=") for o in overrides):
        print("note: a hydra/launcher override only acts in multirun; running with --multirun", file=sys.stderr)
        multirun = True
    read_yaml_mapping(args.config_path, resolve=False)
    parsed = compose.parse_overrides(overrides)
    if len(parsed.combinations) > 1 and not multirun:
        raise UserError("command line", f"overrides {', '.join(parsed.swept_keys)} list several values; add -m to sweep them")
    checked = compose.preflight(args.config_path, parsed, resolve_metadata=not args.cfg)
    for warning in config_warnings(checked[0][1]):
        print(f"warning: {warning}", file=sys.stderr)
    if args.cfg:
        from dataclasses import asdict

        print(OmegaConf.to_yaml(asdict(checked[0][1])), end="")
        return 0
    sweep_dir = Path.cwd() / "multirun" / time.strftime("%Y-%m-%d/%H-%M-%S")
    compose.run_hydra(args.config_path, parsed, multirun, sweep_dir)
    if not multirun:
        return 0
    return _print_sweep_summary(compose.read_sweep_results(sweep_dir), sweep_dir)


def _print_sweep_summary(results: list[dict], sweep_dir: Path) -> int:
    print(f"\nsweep summary ({sweep_dir}):")
    print(f"{'job':>4}  {'status':<7} {'monitored loss':>14}  model_name / overrides")
    for result in results:
        loss = result.get("monitored_loss")
        shown = f"{loss:.4f}" if isinstance(loss, (int, float)) else "-"
        print(f"{result.get('job', '?'):>4}  {result.get('status', '?'):<7} {shown:>14}  {result.get('model_name')}  {' '.join(result.get('overrides', []))}")
        if result.get("status") != "ok":
            print(f"      {result.get('error', '')}")
    return 0 if results and all(r.get("status") == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
