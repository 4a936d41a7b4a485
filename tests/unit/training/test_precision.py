"""Precision: layer_type_dtypes as 3.x applies them, the loss scaler, its lifecycle, and the layer_autocast note."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.config.validate_training import config_warnings
from sequifier.export.artifacts import export_network
from sequifier.model.network import build_network
from sequifier.training.capabilities import check_supported
from sequifier.training.optimization import OptimizationLifecycle
from sequifier.training.precision import LossScaler, apply_layer_dtypes
from sequifier.training.runtime import TrainingRuntime


def tiny_spec(reference_project: Path, tmp_path: Path, **global_training):
    config = tiny_train_config()
    config["global_training"].update(global_training)
    return resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)


def sample_inputs(batch: int = 4, length: int = 8) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return {
        "event": torch.randint(0, 10, (batch, length), generator=generator),
        "channel": torch.randint(0, 3, (batch, length), generator=generator),
        "amount": torch.randn(batch, length, generator=generator),
    }


def test_parameters_take_their_layer_types_dtype(reference_project: Path, tmp_path: Path):
    network = build_network(tiny_spec(reference_project, tmp_path).network)
    apply_layer_dtypes(network, {"embedding": "float16", "linear": "bfloat16", "norm": "float64"})
    dtypes = {name: p.dtype for name, p in network.named_parameters()}
    ingestion = network.interfaces["default"].ingestion
    layer = network.backbone.layers[0]
    assert {p.dtype for m in ingestion.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters()} == {
        torch.float16
    }
    assert layer.attention.qkv.weight.dtype == torch.bfloat16
    assert layer.feed_forward.up.weight.dtype == torch.bfloat16
    assert layer.attention_norm.weight.dtype == torch.float64
    # no `decoder` entry: decoder layers follow `linear`
    assert all(p.dtype == torch.bfloat16 for n, p in network.named_parameters() if ".decoder." in n), dtypes
    decoder = network.interfaces["default"].decoder
    assert decoder.prior("event").dtype == torch.float32  # buffers keep float32


def test_decoder_entry_overrides_linear_and_omitted_types_stay_float32(reference_project: Path, tmp_path: Path):
    network = build_network(tiny_spec(reference_project, tmp_path).network)
    apply_layer_dtypes(network, {"linear": "bfloat16", "decoder": "float32"})
    assert network.backbone.layers[0].attention.qkv.weight.dtype == torch.bfloat16
    assert all(p.dtype == torch.float32 for n, p in network.named_parameters() if ".decoder." in n)
    assert network.backbone.layers[0].attention_norm.weight.dtype == torch.float32
    embeddings = [m for m in network.modules() if isinstance(m, torch.nn.Embedding)]
    assert embeddings and all(m.weight.dtype == torch.float32 for m in embeddings)


def test_low_precision_forward_returns_float32_close_to_float32_model(reference_project: Path, tmp_path: Path):
    spec = tiny_spec(
        reference_project,
        tmp_path,
        layer_type_dtypes={"embedding": "bfloat16", "linear": "bfloat16", "norm": "bfloat16"},
    )
    torch.manual_seed(0)
    network = build_network(spec.network).eval()
    reference = export_network(spec.network, network.state_dict(), torch.device("cpu")).eval()
    runtime = TrainingRuntime(network, spec.config.global_training, torch.device("cpu"))
    pad = torch.tensor([0, 3, 0, 5])
    with torch.no_grad():
        low = runtime.forward("default", sample_inputs(), pad)
        full = reference("default", sample_inputs(), pad)
    for name, output in low.items():
        assert output.dtype == torch.float32
        assert not torch.equal(output, full[name])  # bfloat16 layers really compute in bfloat16
        assert torch.allclose(output, full[name], atol=0.1, rtol=0.05), name


def test_export_network_is_float32_with_the_trained_weights(reference_project: Path, tmp_path: Path):
    spec = tiny_spec(reference_project, tmp_path)
    network = build_network(spec.network)
    apply_layer_dtypes(network, {"linear": "bfloat16"})
    exported = export_network(spec.network, network.state_dict(), torch.device("cpu"))
    assert {p.dtype for p in exported.parameters()} == {torch.float32}
    for (name, low), high in zip(network.state_dict().items(), exported.state_dict().values()):
        assert torch.equal(low.float(), high), name


def test_scaler_skips_overflowing_steps_and_adapts_its_scale():
    scaler = LossScaler(True, init_scale=8.0, growth_interval=2)
    assert scaler.scaled(torch.tensor(1.5)).item() == 12.0
    gradient = torch.tensor([8.0, 16.0])
    assert scaler.unscale([gradient])
    assert gradient.tolist() == [1.0, 2.0]
    assert not scaler.unscale([torch.tensor([float("inf")])])
    assert scaler.scale == 4.0
    assert scaler.unscale([torch.ones(1)]) and scaler.unscale([torch.ones(1)])
    assert scaler.scale == 8.0
    restored = LossScaler(True)
    restored.load_state_dict(scaler.state_dict())
    assert (restored.scale, restored.finite_steps) == (scaler.scale, scaler.finite_steps)


def test_disabled_scaler_changes_nothing():
    scaler = LossScaler(False)
    loss, gradient = torch.tensor(2.0), torch.tensor([float("inf")])
    assert scaler.scaled(loss) is loss
    assert scaler.unscale([gradient]) and scaler.state_dict() == {}


def lifecycle(reset: bool, autocast: str | None = "fp16", dtypes=None) -> OptimizationLifecycle:
    training = SimpleNamespace(
        scheduler_step_on="epoch",
        reset_optimization_on_phase=reset,
        learning_rate=0.1,
        optimizer={"name": "SGD"},
        scheduler=None,
        gradient_clip=None,
        autocast=autocast,
        layer_type_dtypes=dtypes,
    )
    parameters = [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))]
    return OptimizationLifecycle(parameters, training, phase_epochs=[1, 1], phase_steps=[1, 1])


def test_overflow_skips_the_update_but_a_removed_frozen_overflow_does_not():
    cycle = lifecycle(reset=True)
    cycle.begin_phase(0)
    active, frozen = cycle.parameters
    scale = cycle.scaler.scale
    active.grad, frozen.grad = torch.full((2,), scale), torch.full((2,), float("inf"))
    cycle.step()
    assert active.tolist() == [1.0, 1.0] and cycle.scaler.scale == scale / 2
    active.grad, frozen.grad = torch.full((2,), cycle.scaler.scale), torch.full((2,), float("inf"))
    frozen.grad = None  # what the engine does with a dataset's frozen gradients before stepping
    cycle.step()
    assert torch.allclose(active, torch.full((2,), 0.9)) and frozen.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("reset", [True, False])
def test_scaler_is_reset_per_phase_unless_optimization_is_continuous(reset: bool):
    cycle = lifecycle(reset=reset, autocast=None, dtypes={"linear": "float16"})
    cycle.begin_phase(0)
    initial = cycle.scaler.scale
    cycle.parameters[0].grad = torch.full((2,), float("nan"))
    cycle.step()
    cycle.begin_phase(1)
    assert cycle.scaler.scale == (initial if reset else initial / 2)
    saved = cycle.state_dict()
    restored = lifecycle(reset=reset, autocast=None, dtypes={"linear": "float16"})
    restored.load_state_dict(saved)
    assert restored.scaler.state_dict() == saved["scaler"]


def test_no_scaler_without_float16():
    cycle = lifecycle(reset=True, autocast="bf16", dtypes={"linear": "bfloat16"})
    cycle.begin_phase(0)
    assert not cycle.scaler.enabled and cycle.state_dict()["scaler"] == {}


@pytest.mark.parametrize(
    "settings, where, message",
    [
        ({"layer_type_dtypes": {"attention": "bfloat16"}}, "layer_type_dtypes.attention", "unknown layer type"),
        ({"layer_type_dtypes": {"linear": "bf16"}}, "layer_type_dtypes.linear", "not a parameter dtype"),
        (
            {"layer_type_dtypes": {"linear": "bfloat16"}, "distributed": True, "data_parallelism": "fsdp"},
            "layer_type_dtypes",
            "must be null with FSDP",
        ),
        ({"autocast": "int8"}, "autocast", "is not allowed"),
    ],
)
def test_invalid_precision_settings_are_refused_with_their_path(settings, where, message):
    config = tiny_train_config()
    config["global_training"].update(settings)
    with pytest.raises(UserError) as refused:
        canonical_config(config)
    assert f"global_training.{where}" in str(refused.value) and message in str(refused.value)


def test_empty_layer_dtypes_are_none_even_under_fsdp():
    config = tiny_train_config()
    config["global_training"].update(
        layer_type_dtypes={}, distributed=True, world_size=2, backend="gloo", data_parallelism="fsdp"
    )
    assert canonical_config(config).global_training.layer_type_dtypes == {}


def test_precision_and_compile_options_are_supported():
    config = tiny_train_config()
    config["global_training"].update(
        layer_type_dtypes={"linear": "bfloat16"}, layer_autocast=True, autocast="bfloat16", torch_compile="inner"
    )
    canonical = canonical_config(config)
    assert canonical.global_training.autocast == "bf16"
    check_supported(canonical)


def test_fsdp_settings_of_a_single_process_run_say_they_have_no_effect():
    config = tiny_train_config()
    config["global_training"].update(data_parallelism="fsdp", fsdp_cpu_offload=True, layer_autocast=True)
    messages = config_warnings(canonical_config(config))
    assert any(m.startswith("global_training.data_parallelism fsdp has no effect here") for m in messages)
    assert any(m.startswith("global_training.fsdp_cpu_offload has no effect here") for m in messages)
    assert any(m.startswith("global_training.layer_autocast has no effect here") for m in messages)
    assert not [m for m in config_warnings(canonical_config(tiny_train_config())) if "no effect here" in m]
