"""`sequifier infer`: exported models (ONNX or PT) over a stored split -> prediction, probability or embedding files."""

from __future__ import annotations

import argparse

from sequifier.infer.runner import run_inference


def run(args: argparse.Namespace) -> int:
    run_inference(
        args.config_path, data_path=args.data_path, model_path=args.model_path, seed=args.seed, randomize=args.randomize
    )
    return 0
