"""`sequifier preprocess`: a CSV/Parquet table -> split stored windows and their metadata JSON."""

from __future__ import annotations

import argparse

import yaml

from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.preprocess import run_preprocess


def run(args: argparse.Namespace) -> int:
    columns = None if args.selected_columns is None else selected_columns(args.selected_columns)
    config = load_preprocess_config(
        args.config_path, data_path=args.data_path, selected_columns=columns, randomize=args.randomize
    )
    run_preprocess(config)
    return 0


def selected_columns(given: str) -> list[str]:
    """`--selected-columns`: comma-separated names, or a YAML list (`["a,b", c]`) for names holding commas."""
    if given.lstrip().startswith("["):
        return _listed_columns(given)
    columns = [name.strip() for name in given.split(",")]
    if not all(columns):
        raise UserError(
            "--selected-columns",
            f"{given!r} has an empty name; give comma-separated column names, e.g. --selected-columns event,amount",
        )
    return columns


def _listed_columns(given: str) -> list[str]:
    try:
        columns = yaml.safe_load(given)
    except yaml.YAMLError as error:
        reason = str(error).splitlines()[0]
        example = "e.g. '[\"a,b\", amount]'; a name that starts with '[' goes quoted inside such a list"
        raise UserError("--selected-columns", f"{given!r} is not a YAML list ({reason}); {example}") from None
    if not isinstance(columns, list) or not columns:
        raise UserError("--selected-columns", f"{given!r} is not a non-empty YAML list, e.g. '[\"a,b\", amount]'")
    for position, name in enumerate(columns, 1):
        if not isinstance(name, str) or not name:
            raise UserError(
                "--selected-columns",
                f"item {position} of {given!r} is {name!r}, not a column name; quote names YAML reads otherwise "
                '(e.g. \'["1", "yes"]\')',
            )
    return columns
