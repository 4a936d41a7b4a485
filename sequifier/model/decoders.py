"""Decoders: map backbone states at the predicted positions to one output per target column."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.config.resolve import ColumnSpec
from sequifier.model.parameters import tag

SPECIAL_TOKEN_NAMES = {"unknown": 0, "other": 1, "mask": 2}


def predictable_class_ids(column: ColumnSpec, allowed_special: tuple[str, ...]) -> list[int]:
    """Ids a categorical decoder may predict: data values plus explicitly listed special tokens."""
    special = set(SPECIAL_TOKEN_NAMES.values()) - {SPECIAL_TOKEN_NAMES[name] for name in allowed_special}
    return [i for i in range(column.n_classes) if i not in special]


class Decoder(nn.Module):
    """Optional shared hidden blocks, then one linear head per target, over the last `prediction_length` positions.

    A linear decoder has no hidden blocks; an mlp decoder has Linear + GELU blocks of `hidden_dims`.
    Categorical heads return logits over `class_ids` (a buffer mapping output index -> id);
    real heads return one value per position.
    """

    def __init__(self, dim: int, targets: list[ColumnSpec], class_ids: dict[str, list[int]], prediction_length: int, hidden_dims: tuple[int, ...] = ()):
        super().__init__()
        self.prediction_length = prediction_length
        self.target_names = [t.name for t in targets]
        blocks: list[nn.Module] = []
        for hidden in hidden_dims:
            blocks += [nn.Linear(dim, hidden), nn.GELU()]
            dim = hidden
        self.hidden = nn.Sequential(*blocks)
        self.heads = nn.ModuleDict()
        for target in targets:
            width = len(class_ids[target.name]) if target.kind == "categorical" else 1
            self.heads[target.name] = nn.Linear(dim, width)
            if target.kind == "categorical":
                self.register_buffer(f"class_ids_{target.name}", torch.tensor(class_ids[target.name]), persistent=False)
        self.real_targets = {t.name for t in targets if t.kind == "real"}
        tag(self, "decoder")

    def class_ids(self, target: str) -> Tensor:
        return getattr(self, f"class_ids_{target}")

    def forward(self, states: Tensor) -> dict[str, Tensor]:
        last = self.hidden(states[:, -self.prediction_length :])
        outputs = {}
        for name in self.target_names:
            out = self.heads[name](last)
            outputs[name] = out.squeeze(-1) if name in self.real_targets else out
        return outputs
