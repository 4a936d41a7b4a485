"""The full network: per-interface ingestion, adapter and decoder around one shared backbone."""

from __future__ import annotations

from torch import Tensor, nn

from sequifier.config.resolve import ColumnSpec, RunSpec
from sequifier.config.schema import InterfaceConfig
from sequifier.model.backbone import Backbone, has_evidence
from sequifier.model.decoders import DEFAULT_PREDICTABLE_SPECIAL, Decoder, predictable_class_ids
from sequifier.model.ingestion.build import build_ingestion
from sequifier.model.initialization import Policy, SeedScope, extend_policy, initialize_module
from sequifier.model.parameters import tag
from sequifier.model.positions import feature_position_rows


class Interface(nn.Module):
    """An interface's own weights: ingestion, the adapter to dim_model, and the decoder."""

    def __init__(self, ingestion: nn.Module, adapter: nn.Module, decoder: Decoder):
        super().__init__()
        self.ingestion = ingestion
        self.adapter = adapter
        self.decoder = decoder


class SequifierNetwork(nn.Module):
    """Routes a batch through its interface's ingestion, the shared backbone and the decoder."""

    def __init__(self, backbone: Backbone, interfaces: dict[str, Interface]):
        super().__init__()
        self.backbone = backbone
        self.interfaces = nn.ModuleDict(interfaces)

    def forward(self, interface: str, inputs: dict[str, Tensor], left_pad_lengths: Tensor | None) -> dict[str, Tensor]:
        modules = self.interfaces[interface]
        states = self.backbone(modules.adapter(modules.ingestion(inputs)), left_pad_lengths)
        return modules.decoder(states, has_evidence(left_pad_lengths, states.shape[1], states.shape[1]))


def build_network(spec: RunSpec) -> SequifierNetwork:
    """Construct the network a run spec describes: the backbone and every interface a dataset trains.

    Construction and initialization follow model.backbone and each ingestion node's
    initialization policy and seed (see model/initialization.py).
    """
    config = spec.config
    backbone_config = config.model.backbone
    architecture = backbone_config.architecture
    max_length = architecture.max_context_length or config.global_training.context_length
    scope = SeedScope().child("", backbone_config.initialization_seed)
    policy = extend_policy({}, backbone_config.initialization, "model.backbone")
    done: set[int] = set()
    with scope.constructing():
        backbone = Backbone(architecture, max_length)
    initialize_module(backbone, policy, scope.generator(), done)
    position_rows = feature_position_rows(architecture, config.global_training.context_length)
    interfaces = {name: build_interface(name, config.model.interfaces[name], columns, architecture.dim_model, policy,
                                        done, position_rows=position_rows)
                  for name, columns in spec.columns.items()}
    return SequifierNetwork(backbone, interfaces)


def build_interface(name: str, interface: InterfaceConfig, columns: dict[str, ColumnSpec], dim_model: int,
                    policy: Policy, done: set[int], *, position_rows: int = 0) -> Interface:
    """An interface's ingestion tree, the adapter from its width to dim_model, and its decoder.

    The adapter inherits the root ingestion's policy; the decoder the backbone's. `position_rows`
    (see `feature_position_rows`) sizes the per-feature position tables of the leaf branches; 0: none.
    """
    ingestion, root = build_ingestion(interface.ingestion, columns, interface.input_columns, dim_model,
                                      f"model.interfaces.{name}.ingestion", policy, done, position_rows)
    adapter_scope = root.scope.child("adapter", None)
    with adapter_scope.constructing():
        adapter = tag(nn.Linear(ingestion.width, dim_model), "adapter") if ingestion.width != dim_model else nn.Identity()
    initialize_module(adapter, root.policy, adapter_scope.generator(), done)
    targets = [columns[c] for c in interface.target_columns]
    special = interface.categorical_decoder_special_tokens or {}
    class_ids = {t.name: predictable_class_ids(t, special.get(t.name, DEFAULT_PREDICTABLE_SPECIAL))
                 for t in targets if t.kind == "categorical"}
    settings = interface.decoder
    hidden = (settings.hidden_dims or (dim_model,)) if settings.type == "mlp" else ()
    decoder = Decoder(dim_model, targets, class_ids, settings.prediction_length, settings.support, hidden,
                      settings.activation)
    initialize_module(decoder, policy, None, done)
    return Interface(ingestion.module, adapter, decoder)
