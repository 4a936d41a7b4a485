"""Precision and compilation options train from a CLI override, export float32 models that infer, and compute
what float32 eager training computes (bf16 autocast within 2%, layer_autocast and torch.compile alike)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import torch
from conftest import run_sequifier, tiny_train_config, write_yaml
from run_helpers import assert_onnx_matches_weights

from sequifier.config.compose import canonical_config, compose_config
from sequifier.config.resolve import resolve
from sequifier.training.engine import Trainer
from sequifier.training.native_bf16 import native_bf16
from sequifier.training.precision import AUTO_BF16_CPU_WIDTH


def onnx_matches_torch(project: Path, onnx_path: Path, pt_path: Path) -> None:
    """The ONNX model (float32 initializers only) predicts what the PT bundle's weights predict in torch."""
    assert {i.data_type for i in onnx.load(onnx_path).graph.initializer} <= {onnx.TensorProto.FLOAT}
    spec = resolve(canonical_config(tiny_train_config()), run_dir=project / "check", cwd=project)
    assert_onnx_matches_weights(spec, onnx_path, torch.load(pt_path, weights_only=False)["model_state_dict"])


@pytest.mark.parametrize(
    "override",
    [
        "global_training.layer_type_dtypes={embedding:bfloat16,linear:bfloat16,norm:bfloat16,decoder:float32}",
        "global_training.autocast=bf16",
        "global_training.autocast=fp16",
        "global_training.layer_autocast=true",
        # compiling leaves torch's compile workers running: the process must still end (run_sequifier's timeout)
        pytest.param("global_training.torch_compile=outer", marks=pytest.mark.slow),
    ],
)
def test_precision_option_trains_exports_and_infers(reference_project: Path, override: str):
    """The first option trains from the command line, the others in this process (the same composition)."""
    config_file = write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config(export_pt=True))
    if override.startswith("global_training.layer_type_dtypes") or "torch_compile" in override:
        result = run_sequifier(["train", override], reference_project)
        assert result.returncode == 0, result.stderr
    else:
        config = canonical_config(compose_config(config_file, [override]))
        Trainer(resolve(config, run_dir=reference_project / "run", cwd=reference_project)).run()
    models = reference_project / "models"
    onnx_matches_torch(reference_project, models / "tiny-best-1.onnx", models / "tiny-best-1.pt")


def test_the_default_precision_follows_this_cpu_and_the_run_says_so(reference_project: Path):
    config = tiny_train_config(export_onnx=False)
    config["model"]["backbone"]["architecture"]["dim_model"] = AUTO_BF16_CPU_WIDTH
    ingestion = config["model"]["interface"]["ingestion"]
    ingestion.update(output_dim=AUTO_BF16_CPU_WIDTH, feature_embedding_dims={"event": 96, "channel": 16, "amount": 16})
    write_yaml(reference_project / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], reference_project)
    assert result.returncode == 0, result.stderr
    log = (reference_project / "logs" / "tiny" / "tiny.log").read_text()
    native = native_bf16(torch.device("cpu"))
    if native:
        assert (
            f"precision: bf16 autocast, float32 weights (autocast auto: this cpu computes bf16 natively, {native})"
            in log
        )
    else:
        assert "precision: float32 (autocast auto: this cpu has no native bf16" in log


def monitored_loss(project: Path, run: str, epochs: int = 3, **global_training) -> float:
    config = tiny_train_config(training_plan={"epochs": epochs}, export_onnx=False)
    config["global_training"].update(global_training)
    spec = resolve(canonical_config(config), run_dir=project / run, cwd=project)
    return Trainer(spec).run().monitored_loss


def test_bf16_autocast_reaches_the_float32_validation_loss_within_two_percent(reference_project: Path):
    float32 = monitored_loss(reference_project, "fp32", autocast=None)
    bf16 = monitored_loss(reference_project, "bf16", autocast="bf16")
    assert bf16 != float32
    assert abs(bf16 - float32) <= 0.02 * float32


def test_layer_autocast_computes_what_float32_computes(reference_project: Path):
    assert monitored_loss(reference_project, "fp32", epochs=1, autocast=None) == monitored_loss(
        reference_project, "layer", epochs=1, autocast=None, layer_autocast=True
    )


@pytest.mark.parametrize("mode", ["outer", "inner"])
def test_compiled_training_step_computes_the_eager_loss(reference_project: Path, tmp_path: Path, mode: str):
    config = tiny_train_config()
    config["model"]["backbone"]["architecture"]["dropout"] = 0.0
    eager = Trainer(resolve(canonical_config(config), run_dir=tmp_path / "eager", cwd=reference_project))
    config["global_training"]["torch_compile"] = mode
    compiled = Trainer(resolve(canonical_config(config), run_dir=tmp_path / mode, cwd=reference_project))
    compiled.network.load_state_dict(eager.network.state_dict())
    assert list(compiled.network.state_dict()) == list(eager.network.state_dict())  # no _orig_mod. prefixes
    part = next(iter(eager.parts.values()))
    chosen = torch.arange(16)
    expected, _ = eager.batch_loss(part, chosen)
    loss, _ = compiled.batch_loss(part, chosen)
    loss.backward()
    expected.backward()
    assert torch.allclose(loss, expected, rtol=1e-4, atol=1e-5)
    for (name, parameter), reference in zip(compiled.network.named_parameters(), eager.network.parameters()):
        assert torch.allclose(parameter.grad, reference.grad, rtol=1e-3, atol=1e-5), name
