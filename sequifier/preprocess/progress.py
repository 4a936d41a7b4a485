"""Preprocess messages on stderr (its progress displays are sequifier.progress.Progress)."""

from __future__ import annotations

import sys
from typing import Optional, TextIO


def log(message: str, stream: Optional[TextIO] = None) -> None:
    print(f"[preprocess] {message}", file=stream or sys.stderr, flush=True)
