"""Decoders: map backbone states at the predicted positions to one output per target column."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.config.network import ColumnSpec
from sequifier.model.parameters import tag

SPECIAL_TOKEN_NAMES = {"unknown": 0, "other": 1, "mask": 2}
DEFAULT_PREDICTABLE_SPECIAL = ("other",)  # for a target categorical_decoder_special_tokens does not list (as in 3.x)
HIDDEN_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}


def predictable_class_ids(column: ColumnSpec, allowed_special: tuple[str, ...]) -> list[int]:
    """Ids a categorical decoder may predict: data values plus the allowed special tokens."""
    special = set(SPECIAL_TOKEN_NAMES.values()) - {SPECIAL_TOKEN_NAMES[name] for name in allowed_special}
    return [i for i in range(column.n_classes) if i not in special]


class Decoder(nn.Module):
    """Optional shared hidden blocks, then one linear head per target, at every position it is given.

    Training decodes every position of a view; exports pass only the last `prediction_length` states.
    A position that has seen only left padding has no evidence: it outputs the target's prior, fitted
    on the training data (training/priors.py), the best guess without context.

    Each output reads the `support` consecutive states ending at its position, concatenated
    (support x dim_model wide). A linear decoder has no hidden blocks; an mlp decoder has
    Linear + `activation` blocks of `hidden_dims`. Categorical heads return logits over `class_ids`
    (a buffer mapping output index -> id); real heads return one value per position.
    """

    def __init__(
        self,
        dim_model: int,
        targets: list[ColumnSpec],
        class_ids: dict[str, list[int]],
        prediction_length: int,
        support: int = 1,
        hidden_dims: tuple[int, ...] = (),
        activation: str = "relu",
    ):
        super().__init__()
        self.prediction_length = prediction_length
        self.support = support
        self.target_names = [t.name for t in targets]
        dim = support * dim_model
        blocks: list[nn.Module] = []
        for hidden in hidden_dims:
            blocks += [nn.Linear(dim, hidden), HIDDEN_ACTIVATIONS[activation]()]
            dim = hidden
        self.hidden = nn.Sequential(*blocks)
        self.heads = nn.ModuleDict()
        for target in targets:
            width = len(class_ids[target.name]) if target.kind == "categorical" else 1
            self.heads[target.name] = nn.Linear(dim, width)
            if target.kind == "categorical":
                self.register_buffer(f"class_ids_{target.name}", torch.tensor(class_ids[target.name]), persistent=False)
            self.register_buffer(f"prior_{target.name}", torch.zeros(width if target.kind == "categorical" else ()))
        self.real_targets = {t.name for t in targets if t.kind == "real"}
        tag(self, "decoder")

    def class_ids(self, target: str) -> Tensor:
        return getattr(self, f"class_ids_{target}")

    def prior(self, target: str) -> Tensor:
        """The output where there is no evidence: log class frequencies, or the mean, of the training targets."""
        return getattr(self, f"prior_{target}")

    def forward(self, states: Tensor, evidence: Tensor | None = None) -> dict[str, Tensor]:
        """Outputs per target; where `evidence` [batch, positions] is False (nothing real seen yet) the prior."""
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
