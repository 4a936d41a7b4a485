"""`sequifier plot logs/<model> ...`: draw curves.png from the metric files a training run left in each folder."""

from __future__ import annotations

import argparse

from sequifier.config.errors import UserError
from sequifier.training.curves import draw_curves


def run(args: argparse.Namespace) -> int:
    floors = dict(_floor(text) for text in args.floor or ())
    for folder in args.folders:
        print(draw_curves(folder, floors))
    return 0


def _floor(text: str) -> tuple[str, float]:
    target, _, value = text.partition("=")
    try:
        return target, float(value)
    except ValueError:
        raise UserError("--floor", f"expects TARGET=VALUE with a number, e.g. event=1.26, not {text!r}") from None
