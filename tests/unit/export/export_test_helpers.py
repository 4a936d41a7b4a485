"""Helpers of the export tests: a tiny run spec on the reference-v3 metadata and its untrained network."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import REFERENCE_DIR, tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import RunSpec, resolve
from sequifier.model.network import SequifierNetwork, build_network


def tiny_spec(run_dir: Path, architecture: dict | None = None, decoder: dict | None = None, **top_level) -> RunSpec:
    """The tiny train config resolved against the reference metadata (read only); artifacts go under `run_dir`."""
    config = tiny_train_config(project_root=str(run_dir), **top_level)
    config["model"]["backbone"]["architecture"].update(architecture or {})
    config["model"]["interface"]["decoder"].update(decoder or {})
    config["dataset"]["part"]["metadata_config_path"] = str(
        REFERENCE_DIR / "configs" / "metadata_configs" / "events.json"
    )
    return resolve(canonical_config(config), run_dir=run_dir, cwd=REFERENCE_DIR)


def tiny_network(spec: RunSpec, seed: int = 0) -> SequifierNetwork:
    torch.manual_seed(seed)
    return build_network(spec.network).eval()


def example_batch(spec: RunSpec, batch: int = 6, seed: int = 1) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Random inputs of the tiny interface with a mix of padded and unpadded windows."""
    generator = torch.Generator().manual_seed(seed)
    length = spec.config.global_training.context_length
    inputs = {}
    for name in spec.interface.input_columns:
        column = spec.interface_columns[name]
        if column.kind == "categorical":
            inputs[name] = torch.randint(3, column.n_classes, (batch, length), generator=generator)
        else:
            inputs[name] = torch.randn(batch, length, generator=generator)
    padding = torch.tensor([0, 3, 0, 5, 1, 0][:batch] + [0] * max(0, batch - 6))
    return inputs, padding
