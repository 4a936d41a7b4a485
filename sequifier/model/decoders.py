"""Decoders: map backbone states at the predicted positions to one output per target column."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.config.resolve import ColumnSpec

SPECIAL_TOKEN_NAMES = {"unknown": 0, "other": 1, "mask": 2}


def predictable_class_ids(column: ColumnSpec, allowed_special: tuple[str, ...]) -> list[int]:
    """Ids a categorical decoder may predict: data values plus explicitly listed special tokens."""
    special = set(SPECIAL_TOKEN_NAMES.values()) - {SPECIAL_TOKEN_NAMES[name] for name in allowed_special}
    return [i for i in range(column.n_classes) if i not in special]


class LinearDecoder(nn.Module):
    """One linear head per target over the last `prediction_length` positions.

    Categorical heads return logits over `class_ids` (a buffer mapping output index -> id);
    real heads return one value per position.
    """

    def __init__(self, dim: int, targets: list[ColumnSpec], class_ids: dict[str, list[int]], prediction_length: int):
        super().__init__()
        self.prediction_length = prediction_length
        self.target_names = [t.name for t in targets]
        self.heads = nn.ModuleDict()
        for target in targets:
            width = len(class_ids[target.name]) if target.kind == "categorical" else 1
            self.heads[target.name] = nn.Linear(dim, width)
            if target.kind == "categorical":
                self.register_buffer(f"class_ids_{target.name}", torch.tensor(class_ids[target.name]), persistent=False)
        self.real_targets = {t.name for t in targets if t.kind == "real"}

    def class_ids(self, target: str) -> Tensor:
        return getattr(self, f"class_ids_{target}")

    def forward(self, states: Tensor) -> dict[str, Tensor]:
        last = states[:, -self.prediction_length :]
        outputs = {}
        for name in self.target_names:
            out = self.heads[name](last)
            outputs[name] = out.squeeze(-1) if name in self.real_targets else out
        return outputs
