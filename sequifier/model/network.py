"""The full network: per-interface ingestion, adapter and decoder around a shared backbone, built from a NetworkSpec."""

from __future__ import annotations

from torch import Tensor, nn

from sequifier.config.network import InterfaceSpec, NetworkSpec
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
    """Routes a batch through its interface's ingestion, the shared backbone and the decoder.

    Training reads every position (`queries` None); exports ask for the last `queries` positions only.
    """

    def __init__(self, backbone: Backbone, interfaces: dict[str, Interface]):
        super().__init__()
        self.backbone = backbone
        self.interfaces = nn.ModuleDict(interfaces)

    def states(
        self, interface: str, inputs: dict[str, Tensor], left_pad_lengths: Tensor | None, queries: int | None = None
    ) -> Tensor:
        """Final normalized backbone states [batch, positions, dim_model]."""
        modules = self.interfaces[interface]
        return self.backbone(modules.adapter(modules.ingestion(inputs)), left_pad_lengths, queries)

    def forward(
        self, interface: str, inputs: dict[str, Tensor], left_pad_lengths: Tensor | None, queries: int | None = None
    ) -> dict[str, Tensor]:
        """One output per target at every position (or the last `queries`); the prior where nothing real was seen."""
        states = self.states(interface, inputs, left_pad_lengths, queries)
        length = next(iter(inputs.values())).shape[1]
        return self.interfaces[interface].decoder(states, has_evidence(left_pad_lengths, length, states.shape[1]))


def build_network(spec: NetworkSpec) -> SequifierNetwork:
    """Construct the network `spec` describes: the backbone and every interface.

    Construction and initialization follow the backbone's and each ingestion node's
    initialization policy and seed (see model/initialization.py).
    """
    architecture = spec.backbone.architecture
    scope = SeedScope().child("", spec.backbone.initialization_seed)
    policy = extend_policy({}, spec.backbone.initialization, "model.backbone")
    done: set[int] = set()
    with scope.constructing():
        backbone = Backbone(architecture, spec.max_context_length)
    initialize_module(backbone, policy, scope.generator(), done)
    position_rows = feature_position_rows(architecture, spec.context_length)
    interfaces = {
        name: build_interface(name, interface, architecture.dim_model, policy, done, position_rows)
        for name, interface in spec.interfaces.items()
    }
    return SequifierNetwork(backbone, interfaces)


def build_interface(
    name: str, spec: InterfaceSpec, dim_model: int, policy: Policy, done: set[int], position_rows: int
) -> Interface:
    """An interface's ingestion tree, the adapter from its width to dim_model, and its decoder.

    The adapter inherits the root ingestion's policy; the decoder the backbone's. `position_rows`
    (see `feature_position_rows`) sizes the per-feature position tables of the leaf branches; 0: none.
    """
    interface, columns = spec.config, spec.columns
    ingestion, root = build_ingestion(
        interface.ingestion,
        columns,
        interface.input_columns,
        dim_model,
        f"model.interfaces.{name}.ingestion",
        policy,
        done,
        position_rows,
    )
    adapter_scope = root.scope.child("adapter", None)
    with adapter_scope.constructing():
        adapter = (
            tag(nn.Linear(ingestion.width, dim_model), "adapter") if ingestion.width != dim_model else nn.Identity()
        )
    initialize_module(adapter, root.policy, adapter_scope.generator(), done)
    targets = [columns[c] for c in interface.target_columns]
    special = interface.categorical_decoder_special_tokens or {}
    class_ids = {
        t.name: predictable_class_ids(t, special.get(t.name, DEFAULT_PREDICTABLE_SPECIAL))
        for t in targets
        if t.kind == "categorical"
    }
    settings = interface.decoder
    hidden = (settings.hidden_dims or (dim_model,)) if settings.type == "mlp" else ()
    decoder = Decoder(
        dim_model,
        targets,
        class_ids,
        settings.prediction_length,
        settings.support,
        hidden,
        settings.activation,
        settings.dropout,
        settings.hidden_weight_l2,
    )
    decoder_policy = extend_policy(policy, settings.initialization, f"model.interfaces.{name}.decoder")
    initialize_module(decoder, decoder_policy, None, done)
    return Interface(ingestion.module, adapter, decoder)
