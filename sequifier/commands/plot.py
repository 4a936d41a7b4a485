"""`sequifier plot logs/<model> ...`: draw curves.png from the metric files a training run left in each folder."""

from __future__ import annotations

import argparse
import math

from sequifier.config.errors import UserError
from sequifier.training.curves import check_floors, draw_curves
from sequifier.training.history import read_history


def run(args: argparse.Namespace) -> int:
    floors = dict(_floor(text) for text in args.floor or ())
    for folder in args.folders:  # every folder is read and checked before any picture is drawn
        check_floors(folder, read_history(folder), floors)
    for folder in args.folders:
        print(draw_curves(folder, floors))
    return 0


def _floor(text: str) -> tuple[str, float]:
    target, _, value = text.partition("=")
    try:
        floor = float(value)
    except ValueError:
        floor = math.nan
    if not (math.isfinite(floor) and floor >= 0):
        raise UserError(
            "--floor", f"expects TARGET=VALUE with a loss: a finite number, at least 0 (e.g. event=1.26), not {text!r}"
        )
    return target, floor
