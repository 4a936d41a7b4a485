"""File names of exported artifacts under models/ (no heavy imports: infer uses them to find models)."""

from __future__ import annotations

import re
from typing import Iterable


def onnx_name(stem: str, artifact: str, kind: str, epoch: int | str) -> str:
    """`<stem>-<kind>-<epoch>.onnx` (generative) or `<stem>-embedding-<kind>-<epoch>.onnx`."""
    middle = "-embedding" if artifact == "embedding" else ""
    return f"{stem}{middle}-{kind}-{epoch}.onnx"


def pt_name(model_name: str, kind: str, epoch: int) -> str:
    """`<model>-<kind>-<epoch>.pt`: the run-wide PT inference bundle."""
    return f"{model_name}-{kind}-{epoch}.pt"


def is_exported_name(name: str, stems: Iterable[str], model_name: str) -> bool:
    """Whether `name` is the name of a model that a run of these ONNX stems and this model name exports."""
    kind_and_epoch = r"-(best|last)-\d+"
    onnx_stems = "|".join(re.escape(stem) for stem in stems)
    return bool(
        re.fullmatch(rf"({onnx_stems})(-embedding)?{kind_and_epoch}\.onnx", name)
        or re.fullmatch(rf"{re.escape(model_name)}{kind_and_epoch}\.pt", name)
    )
