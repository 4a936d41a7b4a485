"""Numeric precision of training: parameter dtypes per layer type, autocast, and dynamic loss scaling.

`layer_type_dtypes` (as in sequifier 3.x) stores each layer's parameters in its type's dtype and runs
the layer in it: a layer's floating inputs are cast to its parameter dtype, attention computes in its
projections' dtype, and outputs reach the loss as float32. Layer types left out stay float32; decoder
layers take `linear`'s dtype unless `decoder` is given. Buffers and free parameters stay float32.

`autocast` (beyond 3.x) runs forward and loss under `torch.autocast` with float32 parameters; its default,
`auto`, takes bf16 where the device computes bf16 products natively (native_bf16.py) and they are wide
enough to pay, and float32 elsewhere.
Any float16 in use (a float16 layer type or `autocast: fp16`) scales the loss against underflow.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, ContextManager, Iterable

import torch
from torch import Tensor, nn

from sequifier.config.schema import LAYER_DTYPES, GlobalTrainingConfig
from sequifier.model.attention import SelfAttention
from sequifier.model.layers import RMSNorm
from sequifier.model.network import SequifierNetwork
from sequifier.model.positions import RotaryEmbedding
from sequifier.training.native_bf16 import CPU_FLAGS, native_bf16

logger = logging.getLogger("sequifier")

DTYPES = {name: getattr(torch, name) for name in LAYER_DTYPES}
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
AUTO_BF16_CPU_WIDTH = 128
LAYER_CLASSES = (
    (nn.Embedding, "embedding"),
    (nn.Linear, "linear"),
    ((nn.Conv1d, nn.Conv2d, nn.Conv3d), "conv"),
    ((RMSNorm, nn.LayerNorm), "norm"),
)


def needs_loss_scaling(training: GlobalTrainingConfig) -> bool:
    """Whether float16 is in use: a float16 layer type or float16 autocast."""
    return "float16" in (training.layer_type_dtypes or {}).values() or training.autocast == "fp16"


def _layer_type(module: nn.Module) -> str | None:
    return next((name for classes, name in LAYER_CLASSES if isinstance(module, classes)), None)


def _cast_floating(values: Any, dtype: torch.dtype) -> Any:
    if isinstance(values, Tensor):
        return values.to(dtype) if values.is_floating_point() else values
    if isinstance(values, tuple):
        return tuple(_cast_floating(v, dtype) for v in values)
    return values


def _inputs_to(dtype: torch.dtype):
    return lambda module, args: _cast_floating(args, dtype)


def _attention_inputs(module: SelfAttention, args: tuple) -> tuple:
    """Queries, keys, values and the additive mask must share one dtype: that of the projections."""
    return _cast_floating(args, module.qkv.weight.dtype)


def _keep_input_dtype(module: nn.Module, args: tuple, output: Tensor) -> Tensor:
    return output.to(args[0].dtype)


def apply_layer_dtypes(network: SequifierNetwork, dtypes: dict[str, str]) -> None:
    """Store every layer's parameters in its type's dtype and make it compute in that dtype."""
    decoder_layers = {id(m) for interface in network.interfaces.values() for m in interface.decoder.modules()}
    for module in network.modules():
        if isinstance(module, SelfAttention):
            module.register_forward_pre_hook(_attention_inputs)
        elif isinstance(module, RotaryEmbedding):
            module.register_forward_hook(_keep_input_dtype)
        kind = _layer_type(module)
        if kind is None:
            continue
        if kind == "linear" and id(module) in decoder_layers:
            name = dtypes.get("decoder", dtypes.get("linear", "float32"))
        else:
            name = dtypes.get(kind, "float32")
        module.to(DTYPES[name])
        module.register_forward_pre_hook(_inputs_to(DTYPES[name]))


def autocast_dtype(training: GlobalTrainingConfig, device: torch.device, width: int) -> tuple[torch.dtype | None, str]:
    """The dtype the forward and loss autocast to (None: none) for a backbone `width` wide, and a line for the
    run's log saying which precision the run computes in and why.

    `auto` takes bf16 where the device computes bf16 products natively and, on a CPU, the model is at least
    AUTO_BF16_CPU_WIDTH wide: narrower products are too small a share of a CPU step for bf16 to pay
    (docs/performance.md). Layer dtypes and FSDP's layer_autocast are a run's own precision and keep it.
    """
    own = None  # the precision the run sets itself, which autocast computes over
    if training.layer_type_dtypes:
        dtypes = ", ".join(f"{kind} {name}" for kind, name in training.layer_type_dtypes.items())
        own = f"layer dtypes ({dtypes}; global_training.layer_type_dtypes)"
    fsdp = training.distributed and training.data_parallelism == "fsdp"
    if fsdp and training.layer_autocast:
        own = "FSDP bf16 compute (global_training.layer_autocast)"
    if training.autocast in AUTOCAST_DTYPES:
        return _stated(training.autocast, device, own)
    if own is not None:
        return None, f"precision: {own}" + (", loss in float32" if training.layer_type_dtypes else "")
    if fsdp:
        return None, "precision: FSDP float32"
    if training.autocast is None:
        return None, "precision: float32 (global_training.autocast null)"
    native = native_bf16(device)
    if native is None:
        wanted = {"cpu": " or ".join(CPU_FLAGS), "cuda": "compute capability 8.0+"}.get(device.type, "not checked")
        return None, f"precision: float32 (autocast auto: this {device.type} has no native bf16, {wanted})"
    if device.type == "cpu" and width < AUTO_BF16_CPU_WIDTH:
        return None, (
            f"precision: float32 (autocast auto: dim_model {width} < {AUTO_BF16_CPU_WIDTH}, too narrow for bf16 "
            "to pay on a CPU)"
        )
    return torch.bfloat16, (
        f"precision: bf16 autocast, float32 weights (autocast auto: this {device.type} computes bf16 natively, "
        f"{native}); global_training.autocast=null trains in float32"
    )


def _stated(autocast: str, device: torch.device, own: str | None) -> tuple[torch.dtype, str]:
    """The autocast dtype a config names, and its log line (saying when bf16 is not native on the device)."""
    slower = ""
    if autocast == "bf16" and device.type in ("cpu", "cuda") and native_bf16(device) is None:
        slower = f"; this {device.type} has no native bf16, so its products are converted and run slower than float32"
    stated = f"(global_training.autocast {autocast})"
    line = f"{autocast} autocast {stated} over {own}" if own else f"{autocast} autocast, float32 weights {stated}"
    return AUTOCAST_DTYPES[autocast], f"precision: {line}{slower}"


def autocast_context(dtype: torch.dtype | None, device: torch.device) -> ContextManager:
    """`torch.autocast` to `dtype` on the device's type, or no autocast."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


class LossScaler:
    """Dynamic loss scaling: the loss is multiplied by a scale that halves on overflow and doubles after
    `growth_interval` finite steps (torch.amp.GradScaler's policy and defaults).

    torch.amp.GradScaler cannot be used: it refuses to unscale float16 gradients, which float16
    parameters (layer_type_dtypes) have. Disabled, it changes nothing.
    """

    def __init__(self, enabled: bool, init_scale: float = 2.0**16, growth_interval: int = 2000):
        self.enabled = enabled
        self.scale = init_scale if enabled else 1.0
        self.growth_interval = growth_interval
        self.finite_steps = 0

    def scaled(self, loss: Tensor) -> Tensor:
        return loss * self.scale if self.enabled else loss

    def unscale(self, gradients: Iterable[Tensor]) -> bool:
        """Divide `gradients` by the scale and update it; False when one is not finite (skip the step)."""
        if not self.enabled:
            return True
        gradients = list(gradients)
        for gradient in gradients:
            gradient.mul_(1.0 / self.scale)
        finite = bool(torch.stack([g.isfinite().all() for g in gradients]).all()) if gradients else True
        if not finite:
            self.scale, self.finite_steps = self.scale / 2, 0
            logger.warning("gradient overflow: update skipped, loss scale lowered to %g", self.scale)
        else:
            self.finite_steps += 1
            if self.finite_steps == self.growth_interval:
                self.scale, self.finite_steps = self.scale * 2, 0
        return finite

    def state_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "finite_steps": self.finite_steps} if self.enabled else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.enabled and state:
            self.scale, self.finite_steps = state["scale"], state["finite_steps"]
