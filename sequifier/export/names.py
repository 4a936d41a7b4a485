"""File names of exported artifacts under models/ (no heavy imports: infer uses them to find models)."""

from __future__ import annotations


def onnx_name(stem: str, artifact: str, kind: str, epoch: int | str) -> str:
    """`<stem>-<kind>-<epoch>.onnx` (generative) or `<stem>-embedding-<kind>-<epoch>.onnx`."""
    middle = "-embedding" if artifact == "embedding" else ""
    return f"{stem}{middle}-{kind}-{epoch}.onnx"


def pt_name(model_name: str, kind: str, epoch: int) -> str:
    """`<model>-<kind>-<epoch>.pt`: the run-wide PT inference bundle."""
    return f"{model_name}-{kind}-{epoch}.pt"
