"""The canonical train configuration: every field with its type, default and meaning.

This tree is the single source of truth. Hydra composes the user's YAML on top of
`hydra_defaults()` (derived from it); after singleton expansion the composed data is
built into these frozen dataclasses by `sequifier.config.typed.build`.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, Optional

from sequifier.config.typed import nested, option

frozen = dataclass(frozen=True, kw_only=True)


@frozen
class AttentionConfig:
    type: str = option("mha", "attention kind: multi-head, multi-query or grouped-query", choices=("mha", "mqa", "gqa"))
    n_heads: int = option(8, "number of query heads; must divide dim_model")
    n_kv_heads: Optional[int] = option(None, "number of key/value heads (default: n_heads for mha, 1 for mqa)")
    output_projection: bool = option(True, "apply a linear projection after attention")


@frozen
class FeedForwardConfig:
    dim: Optional[int] = option(None, "hidden width of the feed-forward block (default: 4 x dim_model)")
    activation: str = option("swiglu", "feed-forward activation", choices=("swiglu", "geglu", "gelu", "relu", "silu"))


@frozen
class NormalizationConfig:
    type: str = option("rmsnorm", "normalization layer", choices=("rmsnorm", "layernorm"), aliases={"layer_norm": "layernorm"})
    norm_first: bool = option(True, "normalize before attention and feed-forward (pre-norm)")


@frozen
class PositionEncodingConfig:
    type: str = option("learned", "position encoding", choices=("learned", "rope", "sinusoidal"))
    theta: float = option(10000.0, "rotary base frequency (rope only)")


@frozen
class ArchitectureConfig:
    dim_model: int = option(doc="width of the backbone's hidden states")
    max_context_length: Optional[int] = option(None, "longest context the backbone accepts (default: context_length)")
    num_layers: int = option(2, "number of transformer layers")
    attention: AttentionConfig = nested(AttentionConfig, "attention settings")
    feed_forward: FeedForwardConfig = nested(FeedForwardConfig, "feed-forward settings")
    normalization: NormalizationConfig = nested(NormalizationConfig, "normalization settings")
    position_encoding: PositionEncodingConfig = nested(PositionEncodingConfig, "position encoding settings")
    dropout: float = option(0.0, "dropout probability inside the backbone")
    shared_layer_groups: tuple[Any, ...] = option((), "groups of layer indices that share one set of weights")


@frozen
class BackboneConfig:
    initialization_seed: Optional[int] = option(None, "seed isolating constructor and initializer randomness")
    initialization: Optional[dict[str, Any]] = option(None, "initialization overrides per semantic parameter group")
    architecture: ArchitectureConfig = option(doc="the shared transformer backbone")


@frozen
class IngestionConfig:
    type: str = option("embedding", "how input columns become one vector per time step", choices=("embedding",))
    output_dim: Optional[int] = option(None, "width of the ingestion output (default: dim_model)")
    feature_embedding_dims: Optional[dict[str, int]] = option(None, "embedding width per input column (required for mixed categorical/real inputs)")


@frozen
class DecoderConfig:
    type: str = option("linear", "decoder kind", choices=("linear",))
    prediction_length: int = option(1, "number of final positions of each view that are predicted")
    support: int = option(1, "decoder support")


@frozen
class InterfaceConfig:
    input_columns: tuple[str, ...] = option(doc="columns the model reads")
    target_columns: tuple[str, ...] = option(doc="columns the model predicts")
    categorical_decoder_special_tokens: Optional[dict[str, tuple[str, ...]]] = option(None, "special tokens a categorical decoder may predict, per target")
    ingestion: IngestionConfig = nested(IngestionConfig, "ingestion module")
    decoder: DecoderConfig = nested(DecoderConfig, "decoder module")


@frozen
class ModelConfig:
    backbone: BackboneConfig = option(doc="the one shared backbone")
    interfaces: dict[str, InterfaceConfig] = option(doc="named interfaces (ingestion + adapter + decoder)")


@frozen
class PartConfig:
    metadata_config_path: str = option(doc="metadata JSON written by preprocess, relative to project_root")
    file_order: str = option("shuffled", "order of shard files", choices=("shuffled", "name"))


@frozen
class DatasetConfig:
    model_interface: str = option(doc="the interface this dataset trains")
    parts: dict[str, PartConfig] = option(doc="named parts, iterated in declaration order")
    criterion: dict[str, str] = option(doc="loss per target column")
    loss_weights: Optional[dict[str, float]] = option(None, "weight of each target's loss (default 1.0 each)")


@frozen
class SourceConfig:
    source: str = option(doc="a dataset name, or dataset.part")
    batches_per_selection: int = option(1, "batches taken per selection in an interleaved phase")
    weight: float = option(1.0, "selection weight for weighted_random")


@frozen
class PhaseConfig:
    name: str = option(doc="phase name, used in logs and metrics")
    epochs: int = option(doc="number of epochs of this phase")
    mode: str = option("sequential", "how sources are combined", choices=("sequential", "interleaved"))
    selection: str = option("round_robin", "source selection of an interleaved phase", choices=("round_robin", "weighted_random"))
    sources: tuple[SourceConfig, ...] = option(doc="sources trained in this phase")


@frozen
class TrainingPlanConfig:
    phases: tuple[PhaseConfig, ...] = option(doc="ordered training phases")


@frozen
class MonitorConfig:
    source: str = option(doc="evaluation source whose metric is monitored")
    metric: str = option("loss", "monitored metric", choices=("loss",))
    mode: str = option("min", "whether lower or higher is better", choices=("min", "max"))


@frozen
class EvaluationSourceConfig:
    source: str = option(doc="a dataset name, or dataset.part, evaluated on its validation split")


@frozen
class EvaluationConfig:
    sources: tuple[EvaluationSourceConfig, ...] = option(doc="sources evaluated after every epoch")
    monitor: Optional[MonitorConfig] = option(None, "metric choosing the best model (required with several sources)")


@frozen
class OptimizerConfig:
    name: str = option("AdamW", "torch.optim class name", choices=("AdamW",))
    weight_decay: float = option(0.01, "decoupled weight decay")


@frozen
class GlobalTrainingConfig:
    read_format: str = option("parquet", "stored form of the preprocessed data", choices=("parquet",))
    training_objective: str = option("causal", "training objective", choices=("causal",))
    context_length: int = option(doc="number of time steps the model reads")
    target_offset: int = option(1, "how many steps ahead the targets lie")
    window_stride: int = option(1, "distance between training views inside a stored window")
    inference_batch_size: int = option(256, "batch size for validation and export checks")
    batch_size: int = option(64, "per-process training batch size")
    accumulation_steps: int = option(1, "microbatches per optimizer step")
    learning_rate: float = option(1e-4, "peak learning rate")
    optimizer: OptimizerConfig = nested(OptimizerConfig, "optimizer")
    gradient_clip: Optional[float] = option(None, "clip the global gradient norm to this value")
    num_threads: Optional[int] = option(None, "CPU threads used by torch (default: torch's choice)")


@frozen
class TrainConfig:
    project_root: str = option(".", "folder all relative paths resolve against")
    model_name: str = option(doc="name of the model's artifacts, logs and metrics")
    device: str = option("cpu", "torch device: cpu or cuda")
    seed: int = option(1010, "seed of the run's random streams")
    global_training: GlobalTrainingConfig = option(doc="objective, window, optimization and loader settings")
    model: ModelConfig = option(doc="the backbone and its interfaces")
    dataset_training: dict[str, DatasetConfig] = option(doc="named datasets: data, criterion and interface")
    training_plan: TrainingPlanConfig = option(doc="ordered phases of training")
    evaluation: Optional[EvaluationConfig] = option(None, "validation after every epoch")
    export_generative_model: bool = option(True, "export the model that predicts targets")
    export_onnx: bool = option(True, "export ONNX artifacts")


def hydra_defaults() -> dict[str, Any]:
    """Defaults of the sections Hydra may override without '+', derived from the schema.

    Singleton-capable sections (interfaces, datasets, plans, evaluation) are left out:
    their shape depends on which spelling the user's file chose.
    """
    return {
        "project_root": ".",
        "device": "cpu",
        "seed": 1010,
        "global_training": _defaults_of(GlobalTrainingConfig),
        "model": {"backbone": {"architecture": _defaults_of(ArchitectureConfig)}},
        "export_generative_model": True,
        "export_onnx": True,
    }


def _defaults_of(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            out[f.name] = _defaults_of(hints[f.name])
        elif f.default is not dataclasses.MISSING:
            out[f.name] = list(f.default) if isinstance(f.default, tuple) else f.default
    return out
