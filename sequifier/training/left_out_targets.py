"""Categorical target values that no decoder output stands for (special tokens the decoder does not predict), which
the loss leaves out: counted in each split before training and named in a note, with how to predict them."""

from __future__ import annotations

import logging

import torch

from sequifier.data.datasets import PartData
from sequifier.distributed.ranks import SINGLE, Ranks
from sequifier.model.decoders import SPECIAL_TOKEN_NAMES
from sequifier.model.network import SequifierNetwork
from sequifier.training.priors import in_split_values

logger = logging.getLogger("sequifier")

MEANINGS = {"unknown": "missing values", "other": "values outside the id map", "mask": "masked values"}


def note_targets_left_out(network: SequifierNetwork, parts: dict[tuple[str, str], PartData], ranks: Ranks = SINGLE):
    """One note per split and target holding special tokens that its interface's decoder does not predict."""
    for (dataset, part), data in parts.items():
        decoder = network.interfaces[data.interface].decoder
        splits = (("train", data.train), ("validation", data.validation))
        for split, windows in [(name, split.windows) for name, split in splits if split is not None]:
            for target in data.target_columns:
                if target in decoder.real_targets:
                    continue
                predicted = set(decoder.class_ids(target).tolist())
                left_out = {name: i for name, i in SPECIAL_TOKEN_NAMES.items() if i not in predicted}
                values = in_split_values(windows, target)
                counts = ranks.sum(
                    torch.tensor([int((values == i).sum()) for i in left_out.values()] + [values.numel()])
                )
                found = {name: int(count) for name, count in zip(left_out, counts[:-1]) if count}
                if found and ranks.is_main:
                    _note(dataset, part, split, target, data.interface, found, int(counts[-1]))


def _note(dataset: str, part: str, split: str, target: str, interface: str, found: dict[str, int], total: int):
    held = ", ".join(f"{count:,} [{name}] ({MEANINGS[name]})" for name, count in found.items())
    logger.info(
        "note: dataset_training.%s.parts.%s: the windows of its %s split hold %s values of target %r (of %s; an item "
        "in several windows counts in each) that its decoder does not predict: %s; the loss leaves them out; to "
        "predict them, list %s in model.interfaces.%s.categorical_decoder_special_tokens.%s",
        dataset, part, split, f"{sum(found.values()):,}", target, f"{total:,}", held, ", ".join(found), interface,
        target,
    )  # fmt: skip
