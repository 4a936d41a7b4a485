"""Class shares (`dataset_training.<name>.class_share_log_columns`): how often the model predicts each class.

As sequifier 3.x does: at every validation of a source whose dataset lists categorical targets here, the
model's most probable class is counted at every counted target position of the source's validation
splits (its parts combined). Each class predicted at least once gives a row: target, class id and
label, its count, the number of counted positions and the share.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sequifier.config.resolve import RunSpec
from sequifier.data.datasets import PartData
from sequifier.distributed.ranks import SINGLE, Ranks
from sequifier.model.network import SequifierNetwork
from sequifier.training.passes import validation_rows
from sequifier.training.plan import source_parts


def class_share_rows(
    network: SequifierNetwork,
    spec: RunSpec,
    parts: dict[tuple[str, str], PartData],
    source: str,
    device: torch.device,
    ranks: Ranks = SINGLE,
) -> list[dict]:
    """The class-share rows of one evaluation source ([] when its dataset logs none); counts summed over ranks."""
    dataset = source.partition(".")[0]
    columns = tuple(spec.config.dataset_training[dataset].class_share_log_columns or ())
    if not columns:
        return []
    selected = [parts[key] for key in source_parts(spec.config, source)]
    classes = {column: spec.columns[selected[0].interface][column].n_classes for column in columns}
    training = spec.config.global_training
    batch_rows = min(validation_rows(training, part.shape.context_length, device) for part in selected)
    counts = predicted_class_counts(network, selected, classes, batch_rows, device)
    counts = {column: ranks.sum(per_class) for column, per_class in counts.items()}
    metadata = selected[0].spec.metadata
    rows = []
    for column, per_class in counts.items():
        labels = {class_id: label for label, class_id in metadata.special_token_ids.items()}
        labels.update({class_id: label for label, class_id in metadata.id_maps[column].items()})
        total = int(per_class.sum())
        for class_id in per_class.nonzero().flatten().tolist():
            count = int(per_class[class_id])
            rows.append(
                dict(
                    target=column,
                    class_id=class_id,
                    class_label=labels.get(class_id, ""),
                    count=count,
                    total_count=total,
                    share=count / total,
                )
            )
    return rows


@torch.no_grad()
def predicted_class_counts(
    network: SequifierNetwork, parts: list[PartData], classes: dict[str, int], batch_size: int, device: torch.device
) -> dict[str, Tensor]:
    """Per column of `classes` (its number of class ids): how many counted targets of the parts' validation splits
    the model predicts as each class id; {} when no part has a validation split."""
    was_training = network.training
    network.eval()
    counts: dict[str, Tensor] = {}
    for part in parts:
        split = part.validation
        if split is None:
            continue
        decoder = network.interfaces[part.interface].decoder
        for start in range(0, len(split), batch_size):
            chosen = slice(start, start + batch_size)
            batch = split.gathered(chosen, part.shape, part.input_columns, (*classes,))
            inputs = {k: v.to(device) for k, v in batch.inputs.items()}
            pad = batch.left_pad_lengths.to(device) if batch.left_pad_lengths is not None else None
            outputs = network(part.interface, inputs, pad)
            for column, n_classes in classes.items():
                predicted = decoder.class_ids(column)[outputs[column].argmax(-1)].cpu()[batch.target_valid]
                counts[column] = counts.get(column, 0) + torch.bincount(predicted, minlength=n_classes)
    network.train(was_training)
    return counts
