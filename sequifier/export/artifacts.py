"""Which artifacts a run exports, and their file names under models/.

- `<stem>-<kind>-<epoch>.onnx`: the generative model of one dataset (`export_onnx` and `export_generative_model`)
- `<stem>-embedding-<kind>-<epoch>.onnx`: its embedding model (`export_onnx` and `export_embedding_model`)
- `<model>-<kind>-<epoch>.pt`: the PT inference bundle (`export_pt`); one run-wide file serving every
  interface and both model types, chosen at inference

`<stem>` is the model name, or `<model>-<dataset>` when the run trains several datasets.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch

from sequifier.config.errors import UserError, os_problem
from sequifier.config.network import NetworkSpec
from sequifier.config.resolve import RunSpec
from sequifier.export.bundle import write_bundle
from sequifier.export.names import onnx_name, pt_name
from sequifier.export.onnx import export_onnx
from sequifier.model.network import SequifierNetwork, build_network

logger = logging.getLogger("sequifier")


def export_models(network: SequifierNetwork, spec: RunSpec, kind: str, epoch: int) -> list[Path]:
    """Export `network` as the run's `kind` ("best" or "last") model of `epoch`; returns the files written."""
    config = spec.config
    written = []
    if config.export_onnx:
        chosen = {"generative": config.export_generative_model, "embedding": config.export_embedding_model}
        for dataset in config.dataset_training:
            view = spec.dataset_view(dataset)
            for artifact in (artifact for artifact, wanted in chosen.items() if wanted):
                path = spec.models_dir / onnx_name(view.model_name, artifact, kind, epoch)
                with _written_or_refused(path):
                    export_onnx(network, view, path, artifact, config.export_with_dropout)
                written.append(path)
    if config.export_pt and (config.export_generative_model or config.export_embedding_model):
        path = spec.models_dir / pt_name(spec.model_name, kind, epoch)
        with _written_or_refused(path):
            write_bundle(network, spec, path, kind, epoch)
        written.append(path)
    return written


@contextmanager
def _written_or_refused(path: Path) -> Iterator[None]:
    """A model file the file system refuses (a folder in the way, a read-only or full disk) is one line."""
    try:
        yield
    except OSError as error:
        raise UserError(
            str(path),
            f"cannot write the exported model ({os_problem(error)}); the checkpoints are kept: once it can be "
            "written, the same command with global_training.resume.policy=if_exists added exports the models",
        ) from None


def export_network(spec: NetworkSpec, state: dict[str, torch.Tensor], device: torch.device) -> SequifierNetwork:
    """What exports take: an eager float32 network (no layer dtypes, no compilation) holding `state`'s weights."""
    network = build_network(spec)
    network.load_state_dict(state)
    return network.to(device)


def export_run(
    spec: RunSpec,
    device: torch.device,
    last: tuple[dict[str, torch.Tensor], int],
    best: tuple[dict[str, torch.Tensor], int] | None,
) -> list[Path]:
    """The run's last model and, when there is one, its best, each (weights, epoch) from an eager float32 copy."""
    exported = export_models(export_network(spec.network, last[0], device), spec, "last", last[1])
    if best is not None:
        exported += export_models(export_network(spec.network, best[0], device), spec, "best", best[1])
    for path in exported:
        logger.info("exported %s", path)
    return exported
