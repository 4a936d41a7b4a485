"""Embedding ingestion: one embedding per input column, with per-feature positions, concatenated.

A leaf branch: when temporal positions are per feature, each column's embedding gets its own
learned position table here. The leaf's `dropout` applies to its output.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec
from sequifier.model.dropout import Dropout
from sequifier.model.parameters import tag

MIN_CATEGORICAL_WIDTH = 2


def feature_widths(
    columns: list[ColumnSpec], output_dim: int, explicit: dict[str, int] | None, where: str, width_field: str = ""
) -> dict[str, int]:
    """Width of each column's embedding: explicit, or output_dim shared by homogeneous columns.

    Real columns share output_dim evenly (the first ones get the remainder); categorical columns
    as `log_cardinality_widths` allocates it. `width_field` names where output_dim is configured
    (default: `<where>.output_dim`).
    """
    width_field = width_field or f"{where}.output_dim"
    names = [c.name for c in columns]
    if explicit:
        missing = [n for n in names if n not in explicit]
        unknown = [n for n in explicit if n not in names]
        if missing or unknown:
            raise UserError(
                f"{where}.feature_embedding_dims",
                f"must name exactly the input columns {names}; missing {missing}, unknown {unknown}",
            )
        bad = [n for n in names if explicit[n] < 1]
        if bad:
            raise UserError(f"{where}.feature_embedding_dims", f"widths must be positive, see {bad}")
        return {n: explicit[n] for n in names}
    kinds = {c.kind for c in columns}
    if len(kinds) > 1:
        raise UserError(
            f"{where}.feature_embedding_dims", "is required when categorical and real input columns are mixed"
        )
    if kinds == {"categorical"}:
        return log_cardinality_widths(columns, output_dim, width_field)
    if output_dim < len(columns):
        raise UserError(width_field, f"{output_dim} is narrower than the {len(columns)} input columns")
    base, extra = divmod(output_dim, len(columns))
    return {n: base + (1 if i < extra else 0) for i, n in enumerate(names)}


def log_cardinality_widths(columns: list[ColumnSpec], output_dim: int, width_field: str) -> dict[str, int]:
    """Categorical widths as sequifier 3.x allocates them: at least two each, the rest by log(cardinality).

    The spare width is shared in proportion to each column's log(n_classes), rounded down; the
    positions left over go to the largest fractional remainders (ties in column order).
    """
    floor_width = MIN_CATEGORICAL_WIDTH * len(columns)
    if output_dim < floor_width:
        raise UserError(
            width_field,
            f"{output_dim} must be at least twice the number of categorical input columns ({len(columns)})",
        )
    weights = [math.log(c.n_classes) for c in columns]
    shares = [(output_dim - floor_width) * w / sum(weights) for w in weights]
    widths = [MIN_CATEGORICAL_WIDTH + math.floor(s) for s in shares]
    by_remainder = sorted(range(len(columns)), key=lambda i: (math.floor(shares[i]) - shares[i], i))
    for i in by_remainder[: output_dim - sum(widths)]:
        widths[i] += 1
    return {c.name: w for c, w in zip(columns, widths)}


def column_embedding(column: ColumnSpec, width: int) -> nn.Module:
    """A lookup table of a categorical column, a linear map of the scalar of a real one."""
    if column.kind == "categorical":
        return tag(nn.Embedding(column.n_classes, width), "embedding.categorical")
    return tag(nn.Linear(1, width), "embedding.real")


def embed(embedding: nn.Module, values: Tensor) -> Tensor:
    """Values [...] of one column -> [..., width]."""
    return embedding(values) if isinstance(embedding, nn.Embedding) else embedding(values.unsqueeze(-1))


class EmbeddingIngestion(nn.Module):
    """Categorical ids through lookup tables, reals through a linear map of the scalar.

    With `position_rows` > 0 each column adds its own learned position (one row per slot) to its
    embedding. The concatenation is projected to `output_dim` when the widths differ, then dropped out.
    """

    def __init__(
        self, columns: list[ColumnSpec], widths: dict[str, int], output_dim: int, position_rows: int, dropout: float
    ):
        super().__init__()
        self.column_names = [c.name for c in columns]
        self.embeddings = nn.ModuleDict()
        self.positions = nn.ModuleDict()
        for column in columns:
            width = widths[column.name]
            self.embeddings[column.name] = column_embedding(column, width)
            if position_rows:
                self.positions[column.name] = tag(nn.Embedding(position_rows, width), "position")
        total = sum(widths.values())
        self.output_projection = (
            tag(nn.Linear(total, output_dim), "ingestion.output_projection") if total != output_dim else nn.Identity()
        )
        self.dropout = Dropout(dropout) if dropout else nn.Identity()

    def forward(self, inputs: dict[str, Tensor]) -> Tensor:
        parts = []
        for name in self.column_names:
            part = embed(self.embeddings[name], inputs[name])
            if name in self.positions:
                part = part + self.positions[name].weight[: part.shape[1]]
            parts.append(part)
        return self.dropout(self.output_projection(torch.cat(parts, dim=-1)))
