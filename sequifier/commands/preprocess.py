"""`sequifier preprocess`: a CSV/Parquet table -> split stored windows and their metadata JSON."""

from __future__ import annotations

import argparse

from sequifier.config.preprocess import load_preprocess_config
from sequifier.preprocess import run_preprocess


def run(args: argparse.Namespace) -> int:
    columns = args.selected_columns.split(",") if args.selected_columns else None
    config = load_preprocess_config(
        args.config_path, data_path=args.data_path, selected_columns=columns, randomize=args.randomize
    )
    run_preprocess(config)
    return 0
