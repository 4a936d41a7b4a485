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

from sequifier.config.typed import LARGEST_UNSIGNED, nested, option

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
    type: str = option(
        "rmsnorm", "normalization layer", choices=("rmsnorm", "layernorm"), aliases={"layer_norm": "layernorm"}
    )
    norm_first: bool = option(True, "normalize before attention and feed-forward (pre-norm)")


@frozen
class PositionEncodingConfig:
    type: str = option(
        "learned",
        "position encoding: learned tables, rotary (inside attention) or fixed sinusoids",
        choices=("learned", "rope", "sinusoidal"),
    )
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
    positional_encoding_scope: Optional[str] = option(
        None,
        "where temporal positions are added: per_feature (a learned table of context_length rows per input "
        "column at each leaf ingestion branch) or global (one table of max_context_length rows in the backbone); "
        "default per_feature, global for sinusoidal; rope rotates inside attention either way",
        choices=("per_feature", "global"),
    )
    dropout: float = option(0.0, "dropout probability inside the backbone")
    shared_layer_groups: tuple[Any, ...] = option((), "groups of layer indices that share one set of weights")


PARAMETER_GROUPS = (
    "attention.qkv",
    "attention.output",
    "feed_forward.up",
    "feed_forward.down",
    "normalization",
    "position",
    "embedding.categorical",
    "embedding.real",
    "ingestion.output_projection",
    "adapter",
    "merge.projection",
    "merge.gate",
    "free_parameter",
    "decoder.hidden",
    "decoder.output",
)
INIT_METHODS = (
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "normal",
    "trunc_normal",
    "uniform",
    "constant",
    "zeros",
    "ones",
    "preserve",
)
# Initializer names of sequifier 3.x -> the method they are here.
INIT_METHOD_ALIASES = {
    "xavier": "xavier_uniform",
    "glorot": "xavier_uniform",
    "glorot_uniform": "xavier_uniform",
    "glorot_normal": "xavier_normal",
}
SPECIAL_TOKENS = ("unknown", "other", "mask")
TRAINING_OBJECTIVES = ("causal",)
LAYER_TYPES = ("embedding", "linear", "conv", "norm", "decoder")  # keys of global_training.layer_type_dtypes
LAYER_DTYPES = ("float32", "float64", "bfloat16", "float16")  # its values: torch dtype names


@frozen
class InitMethodConfig:
    method: str = option(doc="initializer", choices=INIT_METHODS, aliases=INIT_METHOD_ALIASES)
    gain: Optional[float] = option(None, "gain of xavier initializers")
    mean: Optional[float] = option(None, "mean of normal initializers")
    std: Optional[float] = option(None, "standard deviation of normal initializers")
    a: Optional[float] = option(None, "lower bound (uniform) or negative slope (kaiming)")
    b: Optional[float] = option(None, "upper bound of uniform")
    value: Optional[float] = option(None, "value of constant")
    mode: Optional[str] = option(None, "kaiming fan mode", choices=("fan_in", "fan_out"))
    nonlinearity: Optional[str] = option(
        None, "kaiming nonlinearity", choices=("relu", "leaky_relu", "linear", "tanh", "sigmoid")
    )


@frozen
class InitTargetsConfig:
    weight: Optional[InitMethodConfig] = option(None, "initializer of the group's weights")
    bias: Optional[InitMethodConfig] = option(None, "initializer of the group's biases")


@frozen
class BackboneConfig:
    initialization_seed: Optional[int] = option(
        None, "seed (0..2**63-1) isolating constructor and initializer randomness"
    )
    initialization: Optional[dict[str, InitTargetsConfig]] = option(
        None, "initializer overrides per semantic parameter group"
    )
    architecture: ArchitectureConfig = option(doc="the shared transformer backbone")


@frozen
class MergeConfig:
    type: str = option(
        "concat", "how a composite combines its branches", choices=("concat", "sum", "gated", "attention")
    )


@frozen
class IngestionConfig:
    type: str = option("embedding", "ingestion kind", choices=("embedding", "composite", "depth_transformer"))
    columns: Optional[tuple[str, ...]] = option(None, "columns of this branch (inside a composite)")
    output_dim: Optional[int] = option(None, "width of this node's output (root default: the backbone input width)")
    feature_embedding_dims: Optional[dict[str, int]] = option(
        None, "embedding width per column (required for mixed categorical/real)"
    )
    branches: Optional[dict[str, IngestionConfig]] = option(None, "named child ingestions of a composite")
    merge: Optional[MergeConfig] = option(None, "how a composite merges its branches")
    allow_shared_columns: bool = option(False, "let immediate children of this composite read the same column")
    allow_unused_input_columns: bool = option(False, "root only: input columns no branch reads are allowed")
    auxiliary_input_columns: Optional[tuple[str, ...]] = option(
        None, "root only: input columns deliberately not ingested"
    )
    layout: Optional[str] = option(None, "depth layout name from the dataset metadata (depth_transformer)")
    dropout: float = option(
        0.0,
        "dropout of this node's output: a leaf branch's (embedding) or a depth_transformer's "
        "pooled output; a composite node applies none",
    )
    initialization_seed: Optional[int] = option(None, "seed starting a new initialization namespace for this subtree")
    initialization: Optional[dict[str, InitTargetsConfig]] = option(None, "initializer overrides for this subtree")
    architecture: Optional[ArchitectureConfig] = option(None, "the transformer across child slots (depth_transformer)")


@frozen
class DecoderConfig:
    type: str = option("linear", "decoder kind", choices=("linear", "mlp"))
    prediction_length: int = option(1, "number of final positions of each view that are predicted")
    support: int = option(
        1, "consecutive backbone states each output reads, ending at its own position (a sliding window)"
    )
    hidden_dims: Optional[tuple[int, ...]] = option(None, "hidden widths of an mlp decoder (default: one of dim_model)")
    activation: str = option(
        "relu", "activation after each hidden layer of an mlp decoder", choices=("relu", "gelu", "silu")
    )
    dropout: float = option(0.0, "dropout after each hidden layer of an mlp decoder")
    hidden_weight_l2: float = option(
        0.0, "L2 penalty on the hidden-layer weights of an mlp decoder, added to the optimized loss"
    )
    initialization: Optional[dict[str, InitTargetsConfig]] = option(
        None, "initializer overrides for the decoder (it inherits the backbone's)"
    )


@frozen
class InterfaceConfig:
    input_columns: tuple[str, ...] = option(doc="columns the model reads")
    target_columns: tuple[str, ...] = option(doc="columns the model predicts")
    categorical_decoder_special_tokens: Optional[dict[str, tuple[str, ...]]] = option(
        None,
        "special tokens (unknown, other, mask) a categorical decoder may predict, per target; "
        "a categorical target not listed predicts [other]",
    )
    ingestion: IngestionConfig = nested(IngestionConfig, "ingestion module")
    decoder: DecoderConfig = nested(DecoderConfig, "decoder module")


@frozen
class ModelConfig:
    backbone: BackboneConfig = option(doc="the one shared backbone")
    interfaces: dict[str, InterfaceConfig] = option(doc="named interfaces (ingestion + adapter + decoder)")


@frozen
class PartConfig:
    metadata_config_path: str = option(doc="metadata JSON written by preprocess, relative to project_root")
    file_order: str = option(
        "shuffled",
        "a shard folder's training order: shuffled (files as metadata.json lists them, one shuffle over all views) or "
        "name (files in path order, each file's views shuffled on their own); no effect on a single file",
        choices=("shuffled", "name"),
    )


@frozen
class FreezeNode:
    freeze: Optional[tuple[str, ...]] = option(None, "parameter groups frozen in this scope ([] unfreezes it)")
    freezing_except: Optional[tuple[str, ...]] = option(
        None, "freeze everything in this scope except these groups ([] freezes it)"
    )
    branches: Optional[dict[str, FreezeNode]] = option(None, "per-branch selectors of a composite ingestion")


@frozen
class FreezeConfig:
    backbone: Optional[FreezeNode] = option(None, "freezing of the shared backbone")
    ingestion: Optional[FreezeNode] = option(None, "freezing of the interface's ingestion tree")
    adapter: Optional[FreezeNode] = option(None, "freezing of the interface's adapter")
    decoder: Optional[FreezeNode] = option(None, "freezing of the interface's decoder")


@frozen
class DatasetConfig:
    model_interface: str = option(doc="the interface this dataset trains")
    parts: dict[str, PartConfig] = option(doc="named parts, iterated in declaration order")
    criterion: dict[str, str] = option(doc="loss per target column")
    loss_weights: Optional[dict[str, float]] = option(None, "weight of each target's loss (default 1.0 each)")
    class_share_log_columns: Optional[tuple[str, ...]] = option(
        None,
        "categorical targets whose predicted class shares are written at every validation (validation-class-shares.csv"
        " beside the validation metrics)",
    )
    freeze: Optional[FreezeConfig] = option(None, "parameters this dataset does not update")


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
    selection: str = option(
        "round_robin", "source selection of an interleaved phase", choices=("round_robin", "weighted_random")
    )
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
class ResumeConfig:
    policy: str = option(
        "never",
        "never: start fresh; if_exists: continue from the run's latest checkpoint when there is one; "
        "required: continue from checkpoint_path",
        choices=("never", "if_exists", "required"),
    )
    checkpoint_path: Optional[str] = option(
        None, "checkpoint to continue from (required with policy required; default: the run's latest)"
    )


@frozen
class GlobalTrainingConfig:
    read_format: str = option(
        "parquet",
        "stored form of the preprocessed data (parquet also reads merged csv splits)",
        choices=("parquet", "pt"),
    )
    training_objective: str = option("causal", "training objective", choices=TRAINING_OBJECTIVES)
    context_length: int = option(doc="number of time steps the model reads")
    target_offset: int = option(1, "how many steps ahead the targets lie")
    window_stride: Optional[int] = option(
        None, "distance between training views inside a stored window (null: one right-aligned view per stored window)"
    )
    inference_batch_size: int = option(256, "batch size for validation")
    batch_size: int = option(64, "per-process training batch size")
    accumulation_steps: int = option(1, "microbatches per optimizer step")
    max_tokens_per_pass: Optional[int] = option(
        None,
        "run each training microbatch's forward and backward, and each validation batch's forward, in passes of "
        "at most this many tokens (rows x context_length, at least one row a pass), gradients and totals summed: "
        "the same results with fewer activations held at once (null: 2048 on CPU, whole batches on GPUs; "
        "distributed runs take whole batches and need null)",
    )
    learning_rate: float = option(1e-4, "peak learning rate (positive, at most the largest float32)")
    optimizer: dict[str, Any] = option({"name": "Adam"}, "torch.optim class `name` and its keyword arguments")
    scheduler: Optional[dict[str, Any]] = option(
        {"name": "StepLR", "step_size": 1, "gamma": 0.99},
        "torch.optim.lr_scheduler class `name` and its keyword arguments (null: none)",
    )
    scheduler_step_on: str = option("epoch", "when the scheduler steps", choices=("epoch", "batch"))
    reset_optimization_on_phase: bool = option(True, "new optimizer, scheduler and scaler at every phase")
    gradient_clip: Optional[float] = option(None, "clip the global gradient norm to this value")
    save_interval_epochs: Optional[int] = option(1, "persistent checkpoint every N epochs (null: none)")
    save_interval_batches: Optional[int] = option(None, "persistent checkpoint every N batches")
    save_interval_minutes: Optional[float] = option(None, "persistent checkpoint every N minutes")
    save_latest_interval_minutes: Optional[float] = option(
        None, "refresh only the rolling latest checkpoint every N minutes"
    )
    save_interval_val_loss: bool = option(
        True, "timed and batch snapshots also run validation and record its loss (needs evaluation)"
    )
    resume: ResumeConfig = nested(ResumeConfig, "whether and from which checkpoint the run continues (null: never)")
    early_stopping_patience: Optional[int] = option(
        None, "stop after N epochs without improvement of the monitored validation metric (needs evaluation)"
    )
    layer_type_dtypes: Optional[dict[str, str]] = option(
        None,
        "parameter dtype (float32, float64, bfloat16, float16) per layer type: embedding, linear, conv, norm, "
        "decoder; each layer computes in its dtype, the loss in float32; omitted types stay float32, decoder "
        "layers follow linear; float16 scales the loss; must be null under FSDP; exports are float32",
    )
    layer_autocast: bool = option(
        False, "FSDP mixed precision: compute in bfloat16 (as in 3.x; without FSDP it has no effect)"
    )
    autocast: Optional[str] = option(
        "auto",
        "mixed precision for any run: forward and loss under torch.autocast in this dtype, float32 parameters "
        "(fp16 scales the loss); auto: bf16 where the device computes bf16 natively (CPUs with AVX-512 BF16 or "
        "AMX and dim_model >= 128, CUDA 8.0+), unless layer_type_dtypes or FSDP set the precision; null: float32",
        choices=("auto", "bf16", "fp16"),
        aliases={"bfloat16": "bf16", "float16": "fp16", "fp32": None, "float32": None, "none": None},
    )
    distributed: bool = option(False, "train with several processes")
    data_parallelism: str = option("ddp", "data-parallel strategy", choices=("ddp", "fsdp"))
    fsdp_cpu_offload: bool = option(False, "offload FSDP parameters to CPU memory")
    world_size: int = option(1, "total number of processes across all nodes")
    backend: str = option("nccl", "torch.distributed backend: nccl for GPUs, gloo for CPUs", choices=("gloo", "nccl"))
    torch_compile: str = option(
        "none",
        "torch.compile of training: outer (the whole model), inner (each transformer layer, the FSDP form) or none",
        choices=("none", "outer", "inner"),
    )
    num_workers: Optional[int] = option(
        None,
        "threads that gather training batches ahead of the loop (0: in the loop; null: 1 on a GPU, whose host "
        "would otherwise gather each batch while the GPU waits, 0 on the CPU); any value trains identically",
    )
    num_threads: Optional[int] = option(
        None,
        "torch's intra-op CPU threads during training (1 to 4096), logged (default: torch's choice; in a distributed "
        "run the node's cores / its processes)",
    )
    tensorboard: bool = option(
        False,
        "also write every metric-file row as a TensorBoard scalar under logs/<model>/tensorboard/<run_id>/ "
        "(needs the extra: pip install 'sequifier[tensorboard]')",
    )


@frozen
class TrainConfig:
    project_root: str = option(".", "folder all relative paths resolve against")
    model_name: str = option(doc="name of the model's artifacts, logs and metrics")
    device: str = option("cpu", "torch device: cpu, cuda or cuda:N")
    seed: int = option(1010, "seed of the run's random streams", largest=LARGEST_UNSIGNED)
    skip_metadata: bool = option(False, "skip metadata checks before launching (jobs still read it)")
    additional_config_paths: tuple[str, ...] = option((), "fragments composed into this file, relative to project_root")
    global_training: GlobalTrainingConfig = option(
        doc="objective, window, optimization, precision, distribution and loader settings"
    )
    model: ModelConfig = option(doc="the backbone and its interfaces")
    dataset_training: dict[str, DatasetConfig] = option(
        doc="named datasets: data, criterion, weights, freezing and interface"
    )
    training_plan: TrainingPlanConfig = option(doc="ordered phases of training")
    evaluation: Optional[EvaluationConfig] = option(None, "validation after every epoch")
    export_generative_model: bool = option(True, "export the model that predicts targets")
    export_embedding_model: bool = option(False, "export a model returning backbone activations")
    export_onnx: bool = option(True, "export ONNX artifacts")
    export_pt: bool = option(False, "export PT inference bundles")
    export_with_dropout: bool = option(False, "export the ONNX graph in training mode so dropout stays active")


def dataset_model_name(model_name: str, dataset: str, n_datasets: int) -> str:
    """Name of a dataset's logs, metrics and ONNX files: `<model>`, or `<model>-<dataset>` in multi-dataset runs."""
    return f"{model_name}-{dataset}" if n_datasets > 1 else model_name


def default_call(kind: str) -> dict[str, Any]:
    """The schema's default `global_training.optimizer` or `global_training.scheduler` call."""
    return _defaults_of(GlobalTrainingConfig)[kind]


def hydra_defaults() -> dict[str, Any]:
    """Defaults of the sections Hydra may override without '+', derived from the schema.

    Singleton-capable sections (interfaces, datasets, evaluation) are left out: their
    shape depends on which spelling the user's file chose.
    """
    defaults = _defaults_of(TrainConfig)
    defaults.pop("evaluation")
    for call in ("optimizer", "scheduler"):  # merged into a user's choice, the default's arguments would leak
        defaults["global_training"].pop(call)
    return defaults


def section_fields(path: list[str]) -> set[str] | None:
    """The field names a section of the canonical schema may hold at `path` (keys from the top), or None where
    the path leaves the schema's sections (a named map such as interfaces, a call's free arguments)."""
    cls: Any = TrainConfig
    for part in path:
        hint = typing.get_type_hints(cls).get(part)
        hint = next((a for a in typing.get_args(hint) if a is not type(None)), hint)  # Optional[X] -> X
        if hint is None or not dataclasses.is_dataclass(hint):
            return None
        cls = hint
    return {f.name for f in dataclasses.fields(cls)}


def may_be_null(path: list[str]) -> bool:
    """Whether the field at `path` (keys from the top) of the canonical schema takes null."""
    parent = section_fields(path[:-1])
    if parent is None or path[-1] not in parent:
        return False
    cls: Any = TrainConfig
    for part in path[:-1]:
        hint = typing.get_type_hints(cls)[part]
        cls = next((a for a in typing.get_args(hint) if a is not type(None)), hint)
    return type(None) in typing.get_args(typing.get_type_hints(cls)[path[-1]])


def _defaults_of(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            out[f.name] = _defaults_of(hints[f.name])
        elif f.default is not dataclasses.MISSING:
            out[f.name] = list(f.default) if isinstance(f.default, tuple) else f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out
