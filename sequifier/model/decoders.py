"""Decoders: map backbone states at the predicted positions to one output per target column."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sequifier.config.network import ColumnSpec
from sequifier.model.dropout import Dropout
from sequifier.model.parameters import tag

SPECIAL_TOKEN_NAMES = {"unknown": 0, "other": 1, "mask": 2}
DEFAULT_PREDICTABLE_SPECIAL = ("other",)  # for a target categorical_decoder_special_tokens does not list (as in 3.x)
HIDDEN_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}


def predictable_class_ids(column: ColumnSpec, allowed_special: tuple[str, ...]) -> Tensor:
    """Ids a categorical decoder may predict, in output order: the allowed special tokens, then the data values
    (ids from 3 on; a range, so that a vocabulary counted on the meta device allocates nothing)."""
    first_value = len(SPECIAL_TOKEN_NAMES)
    allowed = sorted(SPECIAL_TOKEN_NAMES[name] for name in allowed_special)
    special = torch.tensor([i for i in allowed if i < column.n_classes], dtype=torch.int64)
    return torch.cat([special, torch.arange(first_value, max(column.n_classes, first_value), dtype=torch.int64)])


class PenalizedLinear(nn.Linear):
    """A linear layer whose weight adds `strength` x ||weight||^2 to the optimized loss, through its gradient."""

    def __init__(self, in_features: int, out_features: int, strength: float):
        super().__init__(in_features, out_features)
        self.strength = strength

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight
        if self.strength and torch.is_grad_enabled() and weight.requires_grad and not torch.onnx.is_in_onnx_export():
            weight = weight.view_as(weight)
            weight.register_hook(lambda gradient: gradient + 2.0 * self.strength * self.weight.detach())
        return F.linear(x, weight, self.bias)


class Decoder(nn.Module):
    """Optional shared hidden blocks, then one linear head per target, at every position it decodes.

    Each output reads the `support` consecutive states ending at its position, concatenated oldest
    first (support x dim_model wide): P states decode P - support + 1 positions. Training decodes
    every position of a view; exports pass the last prediction_length + support - 1 states. A decoded
    position that has seen only left padding has no evidence: it outputs the target's prior, fitted on
    the training data (training/priors.py), the best guess without context.

    A linear decoder has no hidden blocks; an mlp decoder has `Linear + activation (+ dropout)` blocks
    of `hidden_dims`, and `hidden_weight_l2` adds that multiple of the squared hidden weights to the
    optimized loss (through their gradients, as 3.x does: the reported loss leaves it out).
    Categorical heads return logits over `class_ids` (a buffer mapping output index -> id); real
    heads return one value per position.
    """

    def __init__(
        self,
        dim_model: int,
        targets: list[ColumnSpec],
        class_ids: dict[str, Tensor],
        prediction_length: int,
        support: int = 1,
        hidden_dims: tuple[int, ...] = (),
        activation: str = "relu",
        dropout: float = 0.0,
        hidden_weight_l2: float = 0.0,
    ):
        super().__init__()
        self.prediction_length = prediction_length
        self.support = support
        self.target_names = [t.name for t in targets]
        dim = support * dim_model
        blocks: list[nn.Module] = []
        for hidden in hidden_dims:
            layer = tag(PenalizedLinear(dim, hidden, hidden_weight_l2), "decoder.hidden")
            blocks += [layer, HIDDEN_ACTIVATIONS[activation]()] + ([Dropout(dropout)] if dropout else [])
            dim = hidden
        self.hidden = nn.Sequential(*blocks)
        self.heads = nn.ModuleDict()
        for target in targets:
            width = len(class_ids[target.name]) if target.kind == "categorical" else 1
            self.heads[target.name] = tag(nn.Linear(dim, width), "decoder.output")
            if target.kind == "categorical":
                self.register_buffer(f"class_ids_{target.name}", class_ids[target.name].clone(), persistent=False)
            self.register_buffer(f"prior_{target.name}", torch.zeros(width if target.kind == "categorical" else ()))
        self.real_targets = {t.name for t in targets if t.kind == "real"}

    @property
    def states_needed(self) -> int:
        """States an export passes to decode the last prediction_length positions."""
        return self.prediction_length + self.support - 1

    def class_ids(self, target: str) -> Tensor:
        return getattr(self, f"class_ids_{target}")

    def prior(self, target: str) -> Tensor:
        """The output where there is no evidence: log class frequencies, or the mean, of the training targets."""
        return getattr(self, f"prior_{target}")

    def forward(self, states: Tensor, evidence: Tensor | None = None) -> dict[str, Tensor]:
        """Outputs per target at the decoded positions; where `evidence` [batch, positions of `states`] is False at
        a decoded position (nothing real seen yet) the prior."""
        if self.support > 1:
            decoded = states.shape[1] - self.support + 1
            states = torch.cat([states[:, i : i + decoded] for i in range(self.support)], dim=-1)
            evidence = evidence[:, self.support - 1 :] if evidence is not None else None
        hidden = self.hidden(states)
        outputs = {}
        for name in self.target_names:
            out = self.heads[name](hidden)
            if name in self.real_targets:
                out = out.squeeze(-1)
            if evidence is not None:
                out = torch.where(
                    evidence if name in self.real_targets else evidence.unsqueeze(-1), out, self.prior(name)
                )
            outputs[name] = out
        return outputs
