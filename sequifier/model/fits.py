"""Whether a network can be trained in this machine's memory, counted on the meta device before anything is allocated.

A width or layer count typed with a few zeros too many, or a static id map with ids in the billions (each id up to
the largest is a class), would otherwise fail deep in torch's allocator, or build layer after layer for hours.
Training holds per parameter its float32 weight, gradient and two AdamW moments, and on a CPU a pass's logits of
the categorical targets in this memory too: a vocabulary of millions of classes fails there first. Networks whose
rough size is far below the machine's memory are not counted (the meta device's first use is slow).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec, InterfaceSpec, NetworkSpec
from sequifier.config.schema import ArchitectureConfig, IngestionConfig
from sequifier.machine_memory import GIB, physical_memory
from sequifier.model.layers import feed_forward_width

TRAINED_BYTES_PER_PARAMETER = 16
LAYERS_BUILT_WHOLE = 64
BEYOND_ADDRESSABLE = 2**63
LOGIT_COPIES = 4  # float32 logits, their log-softmax and the gradient of each: a pass peaked at 3.6 copies
FLOAT32_BYTES = 4


def training_bytes(spec: NetworkSpec) -> int:
    """Bytes of the weights, gradients and optimizer moments, plus the buffers, of the network `spec` describes.

    Beyond LAYERS_BUILT_WHOLE layers, two networks of one and two layers (unshared, default initialization) are
    counted and the difference scaled to the layer count: an upper bound where layers share weights.
    """
    layers = spec.backbone.architecture.num_layers
    if layers <= LAYERS_BUILT_WHOLE:
        return _counted(spec)
    one, two = (_counted(_with_layers(spec, n)) for n in (1, 2))
    return one + (layers - 1) * (two - one)


def _rough_bytes(spec: NetworkSpec) -> int:
    """A quick over-estimate of the network's size: the meta device's first use costs a second or more."""
    architecture = spec.backbone.architecture
    width = architecture.dim_model
    positions = 2 * spec.max_context_length * width
    vocabularies = _class_parameters(sum(c.n_classes for c in _columns(spec)), width)
    ingestions = sum(_ingestion_parameters(interface, width) for interface in spec.interfaces.values())
    return (
        2 * (_backbone_parameters(architecture) + positions + vocabularies + ingestions) * TRAINED_BYTES_PER_PARAMETER
    )


def _backbone_parameters(architecture: ArchitectureConfig) -> int:
    """An over-estimate of the backbone's layers' parameters."""
    width, hidden = architecture.dim_model, feed_forward_width(architecture)
    return architecture.num_layers * (4 * width * width + 3 * width * hidden + 4 * width)


def _ingestion_widths(ingestion: IngestionConfig) -> int:
    """The sum of the widths an ingestion (and its branches, and a depth transformer's) is built with."""
    widths = (ingestion.output_dim or 0) + sum((ingestion.feature_embedding_dims or {}).values())
    if ingestion.architecture is not None:
        widths += ingestion.architecture.dim_model + feed_forward_width(ingestion.architecture)
    return widths + sum(_ingestion_widths(branch) for branch in (ingestion.branches or {}).values())


def _ingestion_parameters(interface: InterfaceSpec, width: int) -> int:
    """An over-estimate of an ingestion's parameters: each of its widths met by every other, the backbone's and each
    class's."""
    widths = _ingestion_widths(interface.config.ingestion)
    classes = sum(column.n_classes for column in interface.columns.values())
    return widths * (widths + width + classes)


def _columns(spec: NetworkSpec) -> list[ColumnSpec]:
    return [column for interface in spec.interfaces.values() for column in interface.columns.values()]


def _class_parameters(classes: int, width: int) -> int:
    """Parameters of `classes` classes at least: an embedding row and a decoder row each."""
    return 2 * classes * max(width, 1)


def _predicted_classes(interface: InterfaceSpec) -> dict[str, int]:
    """Per categorical target of `interface`, the logits it computes per token (a deep column's per child slot)."""
    return {
        name: column.n_classes * max(column.capacity, 1)
        for name, column in interface.columns.items()
        if column.kind == "categorical" and name in interface.config.target_columns
    }


def logit_bytes(spec: NetworkSpec, pass_tokens: int) -> int:
    """Bytes a pass of `pass_tokens` tokens holds for its logits at once (a pass runs one interface's dataset)."""
    per_token = max((sum(_predicted_classes(i).values()) for i in spec.interfaces.values()), default=0)
    return LOGIT_COPIES * FLOAT32_BYTES * per_token * pass_tokens


def _with_layers(spec: NetworkSpec, layers: int) -> NetworkSpec:
    architecture = replace(spec.backbone.architecture, num_layers=layers, shared_layer_groups=())
    return replace(spec, backbone=replace(spec.backbone, architecture=architecture, initialization=None))


def _counted(spec: NetworkSpec) -> int:
    from sequifier.model.network import build_network

    try:
        with torch.device("meta"):
            network = build_network(spec)
    except RuntimeError as error:
        if "overflow" not in str(error):
            raise
        return BEYOND_ADDRESSABLE  # a tensor of more elements than int64 counts
    parameters = sum(parameter.numel() for parameter in network.parameters())
    buffers = sum(buffer.numel() * buffer.element_size() for buffer in network.buffers())
    return parameters * TRAINED_BYTES_PER_PARAMETER + buffers


def check_network_fits(spec: NetworkSpec, pass_tokens: int = 0) -> None:
    """UserError naming the architecture (or the column whose classes take most of it) when training the network
    needs more than the machine's memory; `pass_tokens`: the tokens of a CPU run's largest pass, whose logits count."""
    memory = physical_memory()
    logits = logit_bytes(spec, pass_tokens)
    if memory is None or _rough_bytes(spec) + logits < memory // 8:
        return
    weights = training_bytes(spec)
    needed = weights + logits
    if needed <= memory:
        return
    architecture = spec.backbone.architecture
    largest = max(_columns(spec), key=lambda c: c.n_classes, default=None)
    classes = largest.n_classes if largest else 0
    vocabulary_bytes = _class_parameters(classes, architecture.dim_model) * TRAINED_BYTES_PER_PARAMETER
    beyond = f"more than this machine's {memory / GIB:,.1f} GiB of memory"
    if logits > needed // 2:
        raise UserError(*_logits_refusal(spec, pass_tokens, memory - weights, beyond))
    size = f"training this network needs about {weights / GIB:,.1f} GiB (float32 weights, gradients and optimizer state"
    beyond = (f"and a pass's logits {logits / GIB:,.1f} GiB more: " if logits >= GIB // 10 else "") + beyond
    if vocabulary_bytes > needed // 2:
        raise UserError(
            f"column {largest.name!r}",
            f"{size}, most of it for the {largest.n_classes:,} classes of this column: its largest id + 1), {beyond}; "
            "give its values smaller ids (a static id map's ids are classes up to the largest) and preprocess again",
        )
    name, interface = max(spec.interfaces.items(), key=lambda item: _ingestion_parameters(item[1], 0))
    if _ingestion_parameters(interface, architecture.dim_model) > _backbone_parameters(architecture):
        raise UserError(
            f"model.interfaces.{name}.ingestion",
            f"{size}, most of it for this ingestion's widths: output_dim, feature_embedding_dims and those of its "
            f"branches add up to {_ingestion_widths(interface.config.ingestion):,}), {beyond}; make them smaller",
        )
    raise UserError(
        "model.backbone.architecture",
        f"{size} of dim_model {architecture.dim_model}, num_layers {architecture.num_layers}, feed_forward.dim "
        f"{feed_forward_width(architecture)}, max_context_length {spec.max_context_length}), {beyond}; make it smaller",
    )


def _logits_refusal(spec: NetworkSpec, pass_tokens: int, left: int, beyond: str) -> tuple[str, str]:
    """Where and what of a refusal for logits beyond the memory the network leaves (`left` bytes)."""
    interface = max(spec.interfaces.values(), key=lambda i: sum(_predicted_classes(i).values()))
    classes = _predicted_classes(interface)
    name = max(classes, key=classes.get)
    per_token = logit_bytes(spec, 1)
    fitting = max(left, 0) // per_token
    rows = fitting // spec.context_length
    advice = (
        f"passes of at most {fitting:,} tokens ({rows:,} rows of context_length {spec.context_length}) fit: set "
        f"global_training.max_tokens_per_pass to at most {fitting:,} (in a distributed run, batch_size and "
        f"inference_batch_size to at most {rows:,})"
        if rows
        else f"even one row of context_length {spec.context_length} does not fit: give the column's values smaller "
        "ids (a static id map's ids are classes up to the largest) and preprocess again"
    )
    return f"column {name!r}", (
        f"a training pass of {pass_tokens:,} tokens holds about {per_token * pass_tokens / GIB:,.1f} GiB of logits "
        f"(float32, with their log-softmax and gradients), most of them for the {classes[name]:,} classes of this "
        f"target column (its largest id + 1), with the network {beyond}; {advice}"
    )
