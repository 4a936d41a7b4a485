"""The model sections of the train guide's examples build the networks they describe."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sequifier.config.compose import canonical_config
from sequifier.config.network import ColumnSpec
from sequifier.config.resolve import RunSpec
from sequifier.model.layers import RMSNorm
from sequifier.model.network import build_network

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"


@pytest.mark.parametrize(
    "example, interface", [("train-singleton.yaml", "default"), ("train-canonical.yaml", "event_prediction")]
)
def test_guide_model_builds_as_described(example: str, interface: str):
    data = yaml.safe_load((GUIDE / example).read_text())
    data["device"] = "cpu"  # the examples ask for cuda; this machine has none
    config = canonical_config(data)
    event = ColumnSpec("event", "categorical", 15)
    spec = RunSpec(
        config=config,
        model_name="guide",
        parts=(),
        columns={interface: {"event": event}},
        project_root=Path("."),
        run_dir=Path("."),
    )
    network = build_network(spec.network)
    backbone = network.backbone
    assert len(backbone.layers) == 6
    layer = backbone.layers[0]
    assert layer.attention.n_heads == 8 and layer.attention.n_kv_heads == 8
    assert layer.attention.qkv.weight.shape == (3 * 128, 128)
    assert layer.feed_forward.gate is not None and layer.feed_forward.up.out_features == 2 * 512
    assert isinstance(layer.attention_norm, RMSNorm) and layer.norm_first
    assert layer.attention.rotary is not None
    assert layer.dropout.p == 0.1
    modules = network.interfaces[interface]
    assert modules.ingestion.embeddings["event"].weight.shape == (15, 128)
    assert modules.decoder.prediction_length == 1
    # 12 data values + [other]: listed by the canonical example, the default of the singleton one
    assert modules.decoder.heads["event"].out_features == 13
