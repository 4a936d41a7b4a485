"""How the training step runs the network: parameter dtypes, autocast and torch.compile, set up once per run.

Exports never see these: they take eager float32 copies (export/artifacts.export_network)."""

from __future__ import annotations

import logging
import time
from typing import ContextManager

import torch
from torch import Tensor

from sequifier.config.schema import GlobalTrainingConfig
from sequifier.model.network import SequifierNetwork
from sequifier.training.compile import compile_layers, compiled_forward
from sequifier.training.precision import apply_layer_dtypes, autocast_context, autocast_dtype

logger = logging.getLogger("sequifier")


class TrainingRuntime:
    """Applies `layer_type_dtypes` to `network` and compiles its training forward pass as configured.

    The network stays the eager module whose state dict is saved; `forward` may be a compiled wrapper.
    Dtypes and per-layer compilation happen before a distributed wrapper is put around the network.
    """

    def __init__(self, network: SequifierNetwork, training: GlobalTrainingConfig, device: torch.device):
        self.training = training
        self.device = device
        if training.layer_type_dtypes is not None:
            apply_layer_dtypes(network, training.layer_type_dtypes)
        self.autocast_dtype, self.precision_note = autocast_dtype(training, device, network.backbone.dim_model)
        compile_layers(network, training.torch_compile)
        self._forward = compiled_forward(network, training.torch_compile)
        self._first_step_started: float | None = None
        self._first_step_logged = training.torch_compile == "none"

    def run_through(self, module: torch.nn.Module) -> None:
        """Train through `module` (DDP around the network in a distributed run), compiled as the network was."""
        self._forward = compiled_forward(module, self.training.torch_compile)

    def autocast(self) -> ContextManager:
        return autocast_context(self.autocast_dtype, self.device)

    def forward(self, interface: str, inputs: dict[str, Tensor], left_pad_lengths: Tensor | None) -> dict[str, Tensor]:
        """Outputs per target in float32 (the loss is computed in float32 whatever the layers compute in)."""
        if self._first_step_started is None:
            self._first_step_started = time.perf_counter()
        outputs = self._forward(interface, inputs, left_pad_lengths)
        return {name: output.float() for name, output in outputs.items()}

    def after_backward(self) -> None:
        """Log how long the first step took when it includes compiling."""
        if not self._first_step_logged:
            self._first_step_logged = True
            logger.info(
                "torch_compile %s: first training step (compiling forward and backward) took %.1f s",
                self.training.torch_compile,
                time.perf_counter() - self._first_step_started,
            )
