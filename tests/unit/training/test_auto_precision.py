"""`autocast: auto`, the default: bf16 where the device computes bf16 products natively and the model is wide
enough for them to pay, float32 elsewhere, and the run's own precision (layer dtypes, FSDP) kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.model.network import build_network
from sequifier.training import precision
from sequifier.training.native_bf16 import native_bf16
from sequifier.training.precision import AUTO_BF16_CPU_WIDTH, autocast_dtype
from sequifier.training.runtime import TrainingRuntime

CPU = torch.device("cpu")
FLAGS = "processor\t: 0\nflags\t\t: fpu sse2 avx2 {extra} avx512f\nbugs\t\t: spectre_v1\n"


def cpu_info(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(FLAGS.format(extra=extra) * 2)
    return path


@pytest.mark.parametrize(
    "extra, expected",
    [
        ("avx512_bf16", "avx512_bf16"),
        ("amx_bf16 amx_tile avx512_bf16", "amx_bf16"),
        ("avx512_vnni avx512bw", None),
        ("avx512_bf16x", None),  # flags are whole words
    ],
)
def test_native_bf16_reads_the_cpus_flags(tmp_path: Path, extra: str, expected: str | None):
    assert native_bf16(CPU, cpu_info(tmp_path, extra)) == expected


def test_no_cpu_information_means_no_native_bf16(tmp_path: Path):
    assert native_bf16(CPU, tmp_path / "missing") is None
    assert native_bf16(torch.device("meta")) is None


def training(**settings):
    config = tiny_train_config()
    config["global_training"].update(settings)
    return canonical_config(config).global_training


def test_auto_is_the_default_and_null_or_its_spellings_mean_float32():
    assert training().autocast == "auto"
    for spelling in (None, "fp32", "float32", "none"):
        assert training(autocast=spelling).autocast is None


def test_an_unknown_precision_is_refused_with_every_allowed_value():
    with pytest.raises(UserError) as refused:
        training(autocast="int8")
    assert "global_training.autocast" in str(refused.value)
    assert "choose one of 'auto', 'bf16', 'fp16' or null" in str(refused.value)


@pytest.fixture
def native(monkeypatch):
    """Pretend this machine's CPU has (a flag name) or lacks (None) native bf16."""

    def pretend(flag: str | None) -> None:
        monkeypatch.setattr(precision, "native_bf16", lambda device: flag)

    return pretend


def test_auto_takes_bf16_on_a_cpu_with_native_bf16_and_says_so(native):
    native("avx512_bf16")
    dtype, note = autocast_dtype(training(), CPU, AUTO_BF16_CPU_WIDTH)
    assert dtype == torch.bfloat16
    assert "bf16 autocast" in note and "avx512_bf16" in note and "autocast=null" in note


@pytest.mark.parametrize(
    "flag, width, why",
    [
        (None, 512, "no native bf16, amx_bf16 or avx512_bf16"),
        ("amx_bf16", AUTO_BF16_CPU_WIDTH - 1, f"dim_model {AUTO_BF16_CPU_WIDTH - 1} < {AUTO_BF16_CPU_WIDTH}"),
    ],
)
def test_auto_keeps_float32_without_native_bf16_or_below_the_width_and_says_why(native, flag, width, why):
    native(flag)
    dtype, note = autocast_dtype(training(), CPU, width)
    assert dtype is None
    assert note.startswith("precision: float32") and why in note


@pytest.mark.parametrize(
    "settings, stated",
    [
        ({"layer_type_dtypes": {"linear": "bfloat16"}}, "precision: layer dtypes (linear bfloat16;"),
        (
            {"distributed": True, "world_size": 2, "data_parallelism": "fsdp", "max_tokens_per_pass": None},
            "precision: FSDP float32",
        ),
        (
            {"distributed": True, "world_size": 2, "data_parallelism": "fsdp", "max_tokens_per_pass": None,
             "layer_autocast": True},
            "precision: FSDP bf16 compute (global_training.layer_autocast)",
        ),
    ],
)  # fmt: skip
def test_auto_keeps_the_runs_own_precision_and_says_which(native, settings, stated):
    native("amx_bf16")
    dtype, note = autocast_dtype(training(**settings), CPU, 512)
    assert dtype is None and note.startswith(stated)


@pytest.mark.parametrize("setting, dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16), (None, None)])
def test_an_explicit_setting_holds_whatever_the_cpu_and_is_logged(native, setting, dtype):
    for flag in (None, "avx512_bf16"):
        native(flag)
        chosen, note = autocast_dtype(training(autocast=setting), CPU, 16)
        assert chosen == dtype
        assert note == (
            "precision: float32 (global_training.autocast null)"
            if setting is None
            else f"precision: {setting} autocast, float32 weights (global_training.autocast {setting})"
            + ("; this cpu has no native bf16, so its products are converted and run slower than float32"
               if setting == "bf16" and flag is None else "")
        )  # fmt: skip


FSDP = {"distributed": True, "world_size": 2, "data_parallelism": "fsdp", "max_tokens_per_pass": None}


@pytest.mark.parametrize(
    "settings, own",
    [
        (
            {"layer_type_dtypes": {"linear": "bfloat16"}},
            "layer dtypes (linear bfloat16; global_training.layer_type_dtypes)",
        ),
        ({"layer_autocast": True, **FSDP}, "FSDP bf16 compute (global_training.layer_autocast)"),
    ],
)  # fmt: skip
def test_an_explicit_autocast_over_the_runs_own_precision_names_both(native, settings, own):
    native("avx512_bf16")
    chosen, note = autocast_dtype(training(autocast="bf16", **settings), CPU, 16)
    assert chosen == torch.bfloat16
    assert note == f"precision: bf16 autocast (global_training.autocast bf16) over {own}"


def test_empty_layer_dtypes_leave_the_choice_to_auto(native):
    native("avx512_bf16")
    assert autocast_dtype(training(layer_type_dtypes={}), CPU, 512) == autocast_dtype(training(), CPU, 512)
    assert autocast_dtype(training(layer_type_dtypes={}), CPU, 512)[0] == torch.bfloat16


def test_the_training_forward_runs_under_what_auto_chose(native, reference_project: Path, tmp_path: Path):
    config = tiny_train_config()
    config["model"]["backbone"]["architecture"]["dim_model"] = AUTO_BF16_CPU_WIDTH
    config["model"]["interface"]["ingestion"]["output_dim"] = AUTO_BF16_CPU_WIDTH
    config["model"]["interface"]["ingestion"]["feature_embedding_dims"] = {"event": 96, "channel": 16, "amount": 16}
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    inputs = {
        "event": torch.randint(0, 10, (2, 8)),
        "channel": torch.randint(0, 3, (2, 8)),
        "amount": torch.randn(2, 8),
    }
    for flag, dtype in ((None, torch.float32), ("avx512_bf16", torch.bfloat16)):
        native(flag)
        network = build_network(spec.network)
        runtime = TrainingRuntime(network, spec.config.global_training, CPU)
        seen: list[torch.dtype] = []
        network.backbone.layers[0].attention.qkv.register_forward_hook(
            lambda m, args, out, seen=seen: seen.append(out.dtype)
        )
        with runtime.autocast():
            outputs = runtime.forward("default", inputs, None)
        assert seen == [dtype]
        assert all(output.dtype == torch.float32 for output in outputs.values())
