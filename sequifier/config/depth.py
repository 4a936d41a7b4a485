"""Depth layouts on the train side: which columns are deep, and the rules that need the metadata to check.

A deep column holds one value per child slot of its layout ([windows, window length, capacity]);
only a depth_transformer branch of that layout reads it. Deep targets, deep BERT objectives and
deep autoregressive inference are excluded (the train guide): a model predicts item-level values.
"""

from __future__ import annotations

from pathlib import Path

from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec
from sequifier.config.schema import IngestionConfig, TrainConfig


def deep_columns(depth_layouts: dict) -> dict[str, tuple[str, int]]:
    """Deep column -> (layout, capacity) for the `depth_layouts` of a metadata file."""
    return {
        column: (layout, int(definition["context_length"]))
        for layout, definition in depth_layouts.items()
        for column in definition["columns"]
    }


def check_depth(
    config: TrainConfig, interface_name: str, columns: dict[str, ColumnSpec], layouts: dict, source: Path
) -> None:
    """The interface reads deep columns only through depth_transformer branches of their layout, predicts none,
    and trains on pt shards (the form that stores them)."""
    interface = config.model.interfaces[interface_name]
    path = f"model.interfaces.{interface_name}"
    for target in interface.target_columns:
        if columns[target].layout is not None:
            raise UserError(
                f"{path}.target_columns",
                f"{target!r} is a deep column of depth layout {columns[target].layout!r}; deep targets are not "
                "supported: a model predicts item-level values",
            )
    deep_inputs = [c for c in interface.input_columns if columns[c].layout is not None]
    if deep_inputs and config.global_training.read_format != "pt":
        raise UserError(
            "global_training.read_format",
            f"deep columns ({', '.join(deep_inputs)}) are stored in pt shards only; set read_format: pt",
        )
    _check_node(interface.ingestion, f"{path}.ingestion", interface.input_columns, columns, layouts, source)


def _check_node(
    node: IngestionConfig,
    path: str,
    read: tuple[str, ...],
    columns: dict[str, ColumnSpec],
    layouts: dict,
    source: Path,
) -> None:
    read = node.columns or tuple(c for c in read if c not in (node.auxiliary_input_columns or ()))
    if node.type == "composite":
        for name, child in (node.branches or {}).items():
            _check_node(child, f"{path}.branches.{name}", (), columns, layouts, source)
        return
    if node.type != "depth_transformer":
        deep = [c for c in read if columns[c].layout is not None]
        if deep:
            raise UserError(
                f"{path}.columns",
                f"{', '.join(deep)} {'is a deep column' if len(deep) == 1 else 'are deep columns'}; "
                f"a {node.type} ingestion cannot read depth features: read them in a depth_transformer branch",
            )
        return
    if node.layout not in layouts:
        known = ", ".join(layouts) or "none"
        raise UserError(f"{path}.layout", f"{node.layout!r} is not a depth layout of {source} (layouts: {known})")
    outside = [c for c in read if columns[c].layout != node.layout]
    if outside:
        raise UserError(
            f"{path}.columns",
            f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'} not in depth layout {node.layout!r} "
            f"(its columns: {', '.join(layouts[node.layout]['columns'])})",
        )
