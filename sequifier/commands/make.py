"""`sequifier make NAME [--demo]`: a project folder with starter configs, and demo data with a known loss floor."""

from __future__ import annotations

import argparse
from pathlib import Path

from sequifier.project.scaffold import make_project


def run(args: argparse.Namespace) -> int:
    make_project(Path(args.name), demo=args.demo)
    return 0
