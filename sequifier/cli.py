"""The `sequifier` command: parses arguments and routes them to sequifier/commands/<command>.py, nothing more."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from pathlib import Path

from sequifier.config.entries import not_utf8, shown
from sequifier.config.errors import UserError, error_lines, file_system_error
from sequifier.fast_exit import run_and_leave
from sequifier.progress import set_quiet
from sequifier.standard_streams import keep_streams_writable

DESCRIPTION = "Train transformer models on tabular event sequences: make -> preprocess -> train -> infer."


def _given(value: str) -> str:
    """A flag's text: an empty one would silently mean the config's value."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


class _Once(argparse.Action):
    """Stores a flag's value, refusing the flag given twice (one of its values would silently win)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = vars(namespace).setdefault("_flags_given", set())
        if self.dest in given:
            parser.error(f"{option_string} is given twice; give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def _config_path(parser: argparse.ArgumentParser, command: str) -> None:
    parser.add_argument(
        "--config-path",
        action=_Once,
        type=lambda value: Path(_given(value)),
        default=Path(f"configs/{command}.yaml"),
        help=f"YAML config file (default: configs/{command}.yaml)",
    )
    _common_flags(parser)


def _common_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show full tracebacks for errors")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or progress lines on stderr")


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sequifier")
    except PackageNotFoundError:
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sequifier", description=DESCRIPTION, allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"sequifier {_installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    make = commands.add_parser("make", allow_abbrev=False, help="create a project folder with starter configs")
    make.add_argument("name", type=_given, help="folder to create")
    make.add_argument("--demo", action="store_true", help="also write a synthetic data set with a known loss floor")
    _common_flags(make)

    preprocess = commands.add_parser(
        "preprocess", allow_abbrev=False, help="turn a CSV/Parquet table into stored training windows"
    )
    _config_path(preprocess, "preprocess")
    preprocess.add_argument(
        "--data-path", action=_Once, type=_given, help="input file or folder, overriding preprocessing_data_path"
    )
    preprocess.add_argument(
        "--selected-columns",
        action=_Once,
        help="columns to keep, overriding selected_columns: comma-separated, or a YAML list (a value starting with"
        " '[') for names with commas or a leading '['",
    )
    preprocess.add_argument(
        "--randomize",
        action="store_true",
        help="draw a fresh seed instead of the config's seed (it is printed and recorded in the metadata as `seed`)",
    )

    train = commands.add_parser(
        "train",
        allow_abbrev=False,
        help="train a model; trailing key=value overrides go to Hydra",
        usage="sequifier train [--config-path F] [flags] [path=value ...]",
        description="Train a model. Any config field can be overridden as path=value after the flags "
        "(+path=value adds a field, ~path removes one); -m sweeps comma-separated values.",
    )
    _config_path(train, "train")
    train.add_argument("--model-name", action=_Once, type=_given, help="override model_name")
    train.add_argument("--seed", action=_Once, type=int, help="override seed")
    train.add_argument(
        "--profile",
        action="store_true",
        help="at the end, print where the wall time and memory went (start-up, config, data loading, model build, "
        "training steps split into data/forward/backward/optimizer, validation, checkpoints, records, export) "
        "and write it to logs/<model_name>/profile.json",
    )
    train.add_argument(
        "--skip-metadata",
        action="store_true",
        help=(
            "skip metadata checks before launching (jobs still read it), "
            "e.g. when submitting from a node without the data"
        ),
    )
    train.add_argument(
        "-m",
        "--multirun",
        action="store_true",
        help="run every combination of comma-separated override values as its own job",
    )
    train.add_argument("--cfg", action=_Once, choices=["job"], help="print the expanded canonical config and exit")

    infer = commands.add_parser("infer", allow_abbrev=False, help="run an exported model over preprocessed data")
    _config_path(infer, "infer")
    infer.add_argument(
        "--data-path", action=_Once, type=_given, help="preprocessed split to infer on, overriding data_path"
    )
    infer.add_argument(
        "--model-path",
        action=_Once,
        type=_given,
        help="model file (.onnx or .pt; a glob picks the newest), overriding model_path",
    )
    seeding = infer.add_mutually_exclusive_group()
    seeding.add_argument(
        "--seed", action=_Once, type=int, help="seed of sampling and inference-time dropout, overriding seed"
    )
    seeding.add_argument(
        "--randomize", action="store_true", help="draw a fresh seed (printed) instead of the configured one"
    )

    plot = commands.add_parser(
        "plot",
        allow_abbrev=False,
        help="draw curves.png from a run's metric files",
        description="Draw FOLDER/curves.png (training and validation loss per target and epoch, persistence "
        "baseline dashed, phase boundaries marked) from the metric files in each logs/<model> FOLDER. "
        "Training draws the same picture after every epoch.",
    )
    plot.add_argument("folders", nargs="+", type=Path, metavar="FOLDER", help="a logs/<model> folder of a run")
    plot.add_argument(
        "--floor",
        action="append",
        metavar="TARGET=VALUE",
        help="draw a known lower bound of a target's loss (e.g. an entropy rate) as a dotted line; repeatable",
    )
    _common_flags(plot)
    for command_parser in commands.choices.values():
        command_parser.set_defaults(command_parser=command_parser)  # whose usage an error about its arguments shows
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        folder = os.getcwd()
    except OSError:
        print("error: working folder: no longer exists (it was removed after the shell entered it); cd into an "
              "existing folder and run again", file=sys.stderr)  # fmt: skip
        return 2
    arguments = sys.argv[1:] if argv is None else argv
    encoding = sys.getfilesystemencoding()
    if encoding.replace("-", "").lower() != "utf8" and any(map(not_utf8, [folder, *arguments])):
        print(f"error: Python reads file names as {encoding} here (the locale is not UTF-8), so it cannot read "
              f"{shown(folder) if not_utf8(folder) else 'an argument'}; set PYTHONUTF8=1 or LC_ALL=C.UTF-8",
              file=sys.stderr)  # fmt: skip
        return 2
    if not_utf8(folder):
        print(f"error: {shown(folder)}: the working folder's path holds bytes that are not UTF-8 (shown as ?); "
              "rename it", file=sys.stderr)  # fmt: skip
        return 2
    undecodable = next((a for a in arguments if not_utf8(a)), None)
    if undecodable is not None:
        print(f"error: {shown(undecodable)}: holds bytes that are not UTF-8 (shown as ?); arguments must be "
              "UTF-8 text (rename a file or folder whose name is not)", file=sys.stderr)  # fmt: skip
        return 2
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    flags = [e for e in extras if e.startswith("-")]
    if flags or (extras and args.command != "train"):
        args.command_parser.error(f"unrecognized arguments: {' '.join(flags or extras)}")
    args.overrides = extras
    set_quiet(args.quiet)
    logging.raiseExceptions = False  # a log file that cannot be written (a full disk) drops records, not the run
    command = importlib.import_module(f"sequifier.commands.{args.command}")
    try:
        return command.run(args)
    except (UserError, OSError) as error:
        if args.debug:
            traceback.print_exc()
        problem = file_system_error(error) if isinstance(error, OSError) else error
        print(error_lines(problem), file=sys.stderr)
        return problem.exit_code


def entry() -> None:
    """The console script and `python -m sequifier`: `main`, then an exit without the interpreter's teardown."""
    keep_streams_writable()
    run_and_leave(main)


if __name__ == "__main__":
    entry()
