"""The full network: per-interface ingestion, adapter and decoder around one shared backbone."""

from __future__ import annotations

from torch import Tensor, nn

from sequifier.config.resolve import ColumnSpec, RunSpec
from sequifier.config.schema import InterfaceConfig
from sequifier.model.backbone import Backbone
from sequifier.model.decoders import Decoder, predictable_class_ids
from sequifier.model.ingestion.build import build_ingestion
from sequifier.model.initialization import Policy, SeedScope, extend_policy, initialize_module
from sequifier.model.parameters import tag


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
        return modules.decoder(states)


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
    interfaces = {name: build_interface(name, config.model.interfaces[name], columns, architecture.dim_model, policy, done)
                  for name, columns in spec.columns.items()}
    return SequifierNetwork(backbone, interfaces)


def build_interface(name: str, interface: InterfaceConfig, columns: dict[str, ColumnSpec], dim_model: int, policy: Policy, done: set[int]) -> Interface:
    """An interface's ingestion tree, the adapter from its width to dim_model, and its decoder.

    The adapter inherits the root ingestion's policy; the decoder the backbone's.
    """
    ingestion, root = build_ingestion(interface.ingestion, columns, interface.input_columns, dim_model, f"model.interfaces.{name}.ingestion", policy, done)
    adapter_scope = root.scope.child("adapter", None)
    with adapter_scope.constructing():
        adapter = tag(nn.Linear(ingestion.width, dim_model), "adapter") if ingestion.width != dim_model else nn.Identity()
    initialize_module(adapter, root.policy, adapter_scope.generator(), done)
    targets = [columns[c] for c in interface.target_columns]
    special = interface.categorical_decoder_special_tokens or {}
    class_ids = {t.name: predictable_class_ids(t, special.get(t.name, ())) for t in targets if t.kind == "categorical"}
    decoder_config = interface.decoder
    hidden = (decoder_config.hidden_dims or (dim_model,)) if decoder_config.type == "mlp" else ()
    decoder = Decoder(dim_model, targets, class_ids, decoder_config.prediction_length, hidden)
    initialize_module(decoder, policy, None, done)
    return Interface(ingestion.module, adapter, decoder)
