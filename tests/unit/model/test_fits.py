"""check_network_fits: the network's training memory counted before anything is allocated."""

from __future__ import annotations

import subprocess
import sys
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


@pytest.mark.parametrize("output_dim", [10**8, 2**63 - 1])
def test_ingestion_widths_beyond_the_machines_memory_are_refused_naming_the_ingestion(
    output_dim, reference_project, tmp_path, monkeypatch
):
    config = tiny_train_config()
    config["model"]["interface"]["ingestion"]["output_dim"] = output_dim
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project).network
    monkeypatch.setattr(fits, "physical_memory", lambda: 24 * fits.GIB)
    with pytest.raises(UserError, match=f"add up to {output_dim + 16:,}\\), more than this machine's") as refused:
        fits.check_network_fits(spec)
    assert refused.value.where == "model.interfaces.default.ingestion"


def with_classes(spec, column_name: str, classes: int):
    interface_name, interface = next(iter(spec.interfaces.items()))
    columns = {**interface.columns, column_name: replace(interface.columns[column_name], n_classes=classes)}
    return replace(spec, interfaces={**spec.interfaces, interface_name: replace(interface, columns=columns)})


def test_a_cpu_pass_whose_logits_exceed_the_memory_is_refused_naming_the_target_and_the_pass_limit(
    reference_project, tmp_path, monkeypatch
):
    spec = with_classes(network_spec(reference_project, tmp_path), "event", 5_000_000)
    weights = fits.training_bytes(spec)
    monkeypatch.setattr(fits, "physical_memory", lambda: weights + fits.logit_bytes(spec, 512) - 1)
    with pytest.raises(UserError) as refused:
        fits.check_network_fits(spec, 512)
    assert refused.value.where == "column 'event'"
    assert "a training pass of 512 tokens" in refused.value.problem and "5,000,000 classes" in refused.value.problem
    assert "passes of at most 511 tokens (63 rows of context_length 8) fit" in refused.value.problem
    fits.check_network_fits(spec, 256)  # the same network in smaller passes
    spec = replace(spec, context_length=128)
    monkeypatch.setattr(fits, "physical_memory", lambda: weights + fits.logit_bytes(spec, 127))
    with pytest.raises(UserError, match="even one row of context_length 128 does not fit: give the column's values"):
        fits.check_network_fits(spec, 128)
    fits.check_network_fits(spec)  # an accelerator's passes are not in this memory


def test_only_categorical_targets_have_logits_and_the_largest_interface_counts(reference_project, tmp_path):
    spec = network_spec(reference_project, tmp_path)
    assert fits.logit_bytes(spec, 100) > 0
    assert fits.logit_bytes(with_classes(spec, "channel", 10**9), 100) == fits.logit_bytes(spec, 100)  # an input only
    larger = with_classes(spec, "event", 10**6)
    assert fits.logit_bytes(larger, 200) == 2 * fits.logit_bytes(larger, 100) > 10**6 * 100
    (interface_name, interface), other = next(iter(spec.interfaces.items())), "second"
    two = replace(larger, interfaces={interface_name: larger.interfaces[interface_name], other: interface})
    assert fits.logit_bytes(two, 100) == fits.logit_bytes(larger, 100)  # a pass runs one interface's dataset


def test_the_logits_counted_are_no_fewer_than_a_real_cpu_pass_holds(tmp_path):
    """Peak RSS of a fresh process over one pass of a 200,000-class decoder above its resident set before the pass,
    against the count's share of it."""
    script = tmp_path / "pass.py"
    script.write_text(
        "import resource, torch\n"
        "import torch.nn.functional as F\n"
        "decoder, tokens = torch.nn.Linear(16, 200_000), 512\n"
        "features, targets = torch.randn(tokens, 16, requires_grad=True), torch.randint(0, 200_000, (tokens,))\n"
        "before = int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize() // 1024\n"
        "F.cross_entropy(decoder(features), targets, reduction='none').mean().backward()\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)\n"
    )
    held = int(subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout)
    per_copy = 200_000 * 512 * fits.FLOAT32_BYTES
    assert held > per_copy  # the pass really holds its logits
    assert fits.LOGIT_COPIES * per_copy >= held
