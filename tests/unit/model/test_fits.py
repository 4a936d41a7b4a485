"""check_network_fits: the network's training memory counted before anything is allocated."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config

import sequifier.model.fits as fits
from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.model.network import build_network


def network_spec(reference_project: Path, tmp_path: Path, **architecture):
    config = tiny_train_config()
    config["model"]["backbone"]["architecture"].update(architecture)
    return resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project).network


def allocated_bytes(spec) -> int:
    network = build_network(spec)
    parameters = sum(p.numel() for p in network.parameters())
    return parameters * fits.TRAINED_BYTES_PER_PARAMETER + sum(b.numel() * b.element_size() for b in network.buffers())


def test_the_count_is_what_building_the_network_allocates(reference_project, tmp_path, monkeypatch):
    spec = network_spec(reference_project, tmp_path, num_layers=3)
    assert fits.training_bytes(spec) == allocated_bytes(spec)
    monkeypatch.setattr(fits, "LAYERS_BUILT_WHOLE", 1)  # the count scaled from one and two layers
    assert fits.training_bytes(spec) == allocated_bytes(spec)


def test_a_network_beyond_the_machines_memory_is_refused_before_it_is_built(reference_project, tmp_path, monkeypatch):
    spec = network_spec(reference_project, tmp_path)
    fits.check_network_fits(spec)
    monkeypatch.setattr(fits, "physical_memory", lambda: fits.training_bytes(spec) - 1)
    monkeypatch.setattr(fits, "_rough_bytes", lambda spec: 2**62)
    with pytest.raises(UserError) as refused:
        fits.check_network_fits(spec)
    assert refused.value.where == "model.backbone.architecture" and "more than this machine's" in refused.value.problem
    huge = replace(
        spec, backbone=replace(spec.backbone, architecture=replace(spec.backbone.architecture, num_layers=10**12))
    )
    monkeypatch.setattr(fits, "physical_memory", lambda: 64 * fits.GIB)
    with pytest.raises(UserError, match="num_layers 1000000000000"):
        fits.check_network_fits(huge)
    assert torch.get_default_device().type == "cpu"


def test_a_vocabulary_beyond_the_machines_memory_is_refused_naming_its_column(reference_project, tmp_path, monkeypatch):
    spec = network_spec(reference_project, tmp_path)
    interface_name, interface = next(iter(spec.interfaces.items()))
    name, column = next((n, c) for n, c in interface.columns.items() if c.kind == "categorical")
    huge = {**interface.columns, name: replace(column, n_classes=2**31)}  # a static id map's largest id 2**31 - 1
    spec = replace(spec, interfaces={**spec.interfaces, interface_name: replace(interface, columns=huge)})
    monkeypatch.setattr(fits, "physical_memory", lambda: 24 * fits.GIB)
    with pytest.raises(UserError, match="most of it for the 2,147,483,648 classes of this column") as refused:
        fits.check_network_fits(spec)
    assert refused.value.where == f"column {name!r}" and "give its values smaller ids" in refused.value.problem
