"""The full network: per-interface ingestion, adapter and decoder around one shared backbone."""

from __future__ import annotations

from torch import Tensor, nn

from sequifier.config.resolve import RunSpec
from sequifier.model.backbone import Backbone
from sequifier.model.decoders import LinearDecoder, predictable_class_ids
from sequifier.model.ingestion.embedding import EmbeddingIngestion, feature_widths


class Interface(nn.Module):
    """An interface's own weights: ingestion, the adapter to dim_model, and the decoder."""

    def __init__(self, ingestion: nn.Module, adapter: nn.Module, decoder: LinearDecoder):
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
    """Construct the network a run spec describes, with the run's seeded RNG."""
    config = spec.config
    architecture = config.model.backbone.architecture
    max_length = architecture.max_context_length or config.global_training.context_length
    backbone = Backbone(architecture, max_length)
    interfaces = {}
    for name, interface in config.model.interfaces.items():
        if name != spec.interface_name:
            continue
        where = f"model.interfaces.{name}.ingestion"
        inputs = [spec.columns[c] for c in interface.input_columns]
        output_dim = interface.ingestion.output_dim or architecture.dim_model
        widths = feature_widths(inputs, output_dim, interface.ingestion.feature_embedding_dims, where)
        ingestion = EmbeddingIngestion(inputs, widths, output_dim)
        adapter = nn.Linear(output_dim, architecture.dim_model) if output_dim != architecture.dim_model else nn.Identity()
        targets = [spec.columns[c] for c in interface.target_columns]
        special = interface.categorical_decoder_special_tokens or {}
        class_ids = {t.name: predictable_class_ids(t, special.get(t.name, ())) for t in targets if t.kind == "categorical"}
        decoder = LinearDecoder(architecture.dim_model, targets, class_ids, interface.decoder.prediction_length)
        interfaces[name] = Interface(ingestion, adapter, decoder)
    return SequifierNetwork(backbone, interfaces)
