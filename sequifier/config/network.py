"""The model-only description of a network: what `build_network` builds, what a PT bundle stores and rebuilds."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sequifier.config.schema import BackboneConfig, IngestionConfig, InterfaceConfig, TrainConfig


@dataclass(frozen=True)
class ColumnSpec:
    """What the model needs to know about one column; a deep column has one value per child slot of its layout."""

    name: str
    kind: str  # "categorical" or "real"
    n_classes: int = 0
    layout: str | None = None  # the depth layout of a deep column
    capacity: int = 0  # child slots per item of that layout


def depth_mask_input(layout: str) -> str:
    """Name of the [batch, time, capacity] boolean input marking the valid child slots of `layout`."""
    return f"depth_valid_masks.{layout}"


@dataclass(frozen=True)
class InterfaceSpec:
    """One interface's config and the columns it reads and predicts."""

    config: InterfaceConfig
    columns: dict[str, ColumnSpec]


@dataclass(frozen=True)
class NetworkSpec:
    """The backbone, the context the network is trained on, and every interface it holds."""

    backbone: BackboneConfig
    context_length: int
    interfaces: dict[str, InterfaceSpec]

    @property
    def max_context_length(self) -> int:
        """Positions the backbone is built for: `max_context_length`, or the training context."""
        return self.backbone.architecture.max_context_length or self.context_length

    def execution_only(self) -> NetworkSpec:
        """Without the initialization settings: what running trained weights needs (a PT bundle stores this)."""
        interfaces = {
            name: replace(
                spec,
                config=replace(
                    spec.config,
                    ingestion=_without_initialization(spec.config.ingestion),
                    decoder=replace(spec.config.decoder, initialization=None),
                ),
            )
            for name, spec in self.interfaces.items()
        }
        backbone = replace(self.backbone, initialization=None, initialization_seed=None)
        return replace(self, backbone=backbone, interfaces=interfaces)


def _without_initialization(node: IngestionConfig) -> IngestionConfig:
    branches = {name: _without_initialization(child) for name, child in (node.branches or {}).items()}
    return replace(node, initialization=None, initialization_seed=None, branches=branches or node.branches)


def network_spec(config: TrainConfig, columns: dict[str, dict[str, ColumnSpec]]) -> NetworkSpec:
    """The network of a run: its backbone and the interfaces its datasets train (`columns` per interface)."""
    interfaces = {name: InterfaceSpec(config.model.interfaces[name], dict(specs)) for name, specs in columns.items()}
    return NetworkSpec(config.model.backbone, config.global_training.context_length, interfaces)
