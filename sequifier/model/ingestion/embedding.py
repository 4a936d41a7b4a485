"""Embedding ingestion: one embedding per input column, concatenated, projected when widths differ."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sequifier.config.errors import UserError
from sequifier.config.resolve import ColumnSpec
from sequifier.model.parameters import tag


def feature_widths(columns: list[ColumnSpec], output_dim: int, explicit: dict[str, int] | None, where: str) -> dict[str, int]:
    """Width of each column's embedding: explicit, or output_dim shared evenly by homogeneous columns."""
    names = [c.name for c in columns]
    if explicit:
        missing = [n for n in names if n not in explicit]
        unknown = [n for n in explicit if n not in names]
        if missing or unknown:
            raise UserError(f"{where}.feature_embedding_dims", f"must name exactly the input columns {names}; missing {missing}, unknown {unknown}")
        bad = [n for n in names if explicit[n] < 1]
        if bad:
            raise UserError(f"{where}.feature_embedding_dims", f"widths must be positive, see {bad}")
        return {n: explicit[n] for n in names}
    if len({c.kind for c in columns}) > 1:
        raise UserError(f"{where}.feature_embedding_dims", "is required when categorical and real input columns are mixed")
    if output_dim < len(columns):
        raise UserError(f"{where}.output_dim", f"{output_dim} is narrower than the {len(columns)} input columns")
    base, extra = divmod(output_dim, len(columns))
    return {n: base + (1 if i < extra else 0) for i, n in enumerate(names)}


class EmbeddingIngestion(nn.Module):
    """Categorical ids through lookup tables, reals through a linear map of the scalar."""

    def __init__(self, columns: list[ColumnSpec], widths: dict[str, int], output_dim: int):
        super().__init__()
        self.column_names = [c.name for c in columns]
        self.embeddings = nn.ModuleDict()
        for column in columns:
            width = widths[column.name]
            embedding = nn.Embedding(column.n_classes, width) if column.kind == "categorical" else nn.Linear(1, width)
            self.embeddings[column.name] = tag(embedding, "embedding")
        total = sum(widths.values())
        self.output_projection = tag(nn.Linear(total, output_dim), "ingestion.output_projection") if total != output_dim else nn.Identity()

    def forward(self, inputs: dict[str, Tensor]) -> Tensor:
        parts = []
        for name in self.column_names:
            value = inputs[name]
            embedding = self.embeddings[name]
            parts.append(embedding(value) if isinstance(embedding, nn.Embedding) else embedding(value.unsqueeze(-1)))
        return self.output_projection(torch.cat(parts, dim=-1))
