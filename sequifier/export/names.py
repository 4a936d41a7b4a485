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


def exported_names(onnx: Iterable[tuple[str, str]], pt_model: str | None) -> re.Pattern:
    """The names, of any kind and epoch, of the ONNX models of these (stem, artifact) pairs and of `pt_model`'s
    PT bundle (None: no bundle)."""
    any_kind, any_epoch = "\x00", "\x01"
    names = [onnx_name(stem, artifact, any_kind, any_epoch) for stem, artifact in onnx]
    names += [pt_name(pt_model, any_kind, any_epoch)] if pt_model is not None else []
    spelled = [re.escape(name).replace(any_kind, "(best|last)").replace(any_epoch, r"\d+") for name in names]
    return re.compile("|".join(spelled) or "(?!)")
