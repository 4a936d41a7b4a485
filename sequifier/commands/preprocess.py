"""`sequifier preprocess`: a CSV/Parquet table -> split stored windows and their metadata JSON."""

from __future__ import annotations

import argparse

from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.preprocess import run_preprocess


def run(args: argparse.Namespace) -> int:
    columns = None
    if args.selected_columns is not None:
        columns = [name.strip() for name in args.selected_columns.split(",")]
        if not all(columns):
            raise UserError(
                "--selected-columns",
                f"{args.selected_columns!r} has an empty name; give comma-separated "
                "column names, e.g. --selected-columns event,amount",
            )
    config = load_preprocess_config(
        args.config_path, data_path=args.data_path, selected_columns=columns, randomize=args.randomize
    )
    run_preprocess(config)
    return 0
