"""Builds an interface's ingestion tree from its config, resolving widths, seeds and initialization.

Each ingestion type is one builder in BUILDERS; a new branch type is one new module plus one entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from torch import nn

from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec
from sequifier.config.schema import IngestionConfig
from sequifier.model.ingestion.composite import CompositeIngestion
from sequifier.model.ingestion.depth import DepthTransformerIngestion
from sequifier.model.ingestion.embedding import EmbeddingIngestion, feature_widths
from sequifier.model.initialization import Policy, SeedScope, extend_policy, initialize_module


@dataclass(frozen=True)
class Built:
    module: nn.Module
    width: int


@dataclass(frozen=True)
class NodeContext:
    """Where a node sits: its config path, seed scope, the initialization policy it inherits,
    and the rows of the per-feature position tables its leaves hold (0: none)."""

    path: str
    scope: SeedScope
    policy: Policy
    done: set[int]
    position_rows: int


def build_ingestion(
    node: IngestionConfig,
    columns: dict[str, ColumnSpec],
    input_columns: tuple[str, ...],
    root_width: int,
    path: str,
    inherited: Policy,
    done: set[int],
    position_rows: int,
) -> tuple[Built, NodeContext]:
    """The root ingestion (width: output_dim, or the backbone input width) and its context.

    `position_rows`: rows of each leaf column's learned position table, 0 when positions are not per feature.
    """
    width = node.output_dim or root_width
    read = node.columns or tuple(c for c in input_columns if c not in (node.auxiliary_input_columns or ()))
    scope = SeedScope().child("", node.initialization_seed)
    context = NodeContext(path, scope, extend_policy(inherited, node.initialization, path), done, position_rows)
    return BUILDERS[node.type](node, columns, read, width, context), context


def _node_width(node: IngestionConfig, path: str) -> int:
    if node.output_dim:
        return node.output_dim
    if node.type == "depth_transformer":
        return node.architecture.dim_model
    if node.feature_embedding_dims:
        return sum(node.feature_embedding_dims.values())
    raise UserError(f"{path}.output_dim", "a branch needs output_dim (or feature_embedding_dims to sum)")


def _build_embedding(
    node: IngestionConfig, columns: dict[str, ColumnSpec], read: tuple[str, ...], width: int, context: NodeContext
) -> Built:
    specs = [columns[c] for c in read]
    widths = feature_widths(specs, width, node.feature_embedding_dims, context.path)
    with context.scope.constructing():
        module = EmbeddingIngestion(specs, widths, width, context.position_rows, node.dropout)
    initialize_module(module, context.policy, context.scope.generator(), context.done)
    return Built(module, width)


def _build_depth(
    node: IngestionConfig, columns: dict[str, ColumnSpec], read: tuple[str, ...], width: int, context: NodeContext
) -> Built:
    specs = [columns[c] for c in read]
    dim_model = node.architecture.dim_model
    where = context.path
    widths = feature_widths(specs, dim_model, node.feature_embedding_dims, where, f"{where}.architecture.dim_model")
    with context.scope.constructing():
        module = DepthTransformerIngestion(specs, widths, node.architecture, width, context.position_rows, node.dropout)
    initialize_module(module, context.policy, context.scope.generator(), context.done)
    return Built(module, width)


def _build_composite(
    node: IngestionConfig, columns: dict[str, ColumnSpec], read: tuple[str, ...], width: int, context: NodeContext
) -> Built:
    branches, widths = {}, {}
    for name, child in (node.branches or {}).items():
        path = f"{context.path}.branches.{name}"
        child_policy = extend_policy(context.policy, child.initialization, path)
        child_scope = context.scope.child(name, child.initialization_seed)
        child_context = NodeContext(path, child_scope, child_policy, context.done, context.position_rows)
        built = BUILDERS[child.type](
            child, columns, tuple(child.columns or ()), _node_width(child, path), child_context
        )
        branches[name], widths[name] = built.module, built.width
    with context.scope.constructing():
        module = CompositeIngestion(branches, widths, node.merge.type if node.merge else "concat", width)
    initialize_module(module.merge, context.policy, context.scope.generator(), context.done)
    return Built(module, width)


BUILDERS: dict[str, Callable[..., Built]] = {
    "embedding": _build_embedding,
    "composite": _build_composite,
    "depth_transformer": _build_depth,
}
