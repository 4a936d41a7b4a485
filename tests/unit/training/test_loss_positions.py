"""The training loss covers every counted position of a view: none dropped, none added."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.data.stored import load_split
from sequifier.data.views import widened
from sequifier.training.engine import Trainer


def test_batch_loss_is_the_mean_of_per_position_losses_over_counted_positions(reference_project: Path, tmp_path: Path):
    config = tiny_train_config()
    config["global_training"]["window_stride"] = 3
    config["model"]["backbone"]["architecture"]["dropout"] = 0.0
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    trainer = Trainer(spec)
    # the validation windows are left-padded: train on them to see padding masked
    validation = next(iter(trainer.parts.values()))
    part = replace(
        validation,
        spec=replace(validation.spec, train_path=validation.spec.validation_path),
        train=validation.validation,
    )
    chosen = torch.arange(len(part.train))
    loss, sums = trainer.batch_loss(part, chosen)

    raw = load_split(part.spec.train_path, ["event", "amount"], {"event"})
    context = spec.config.global_training.context_length
    windows, ends = part.train.window_index[chosen].tolist(), part.train.end_slot[chosen].tolist()
    inputs = {"event": [], "channel": [], "amount": []}
    for window, end in zip(windows, ends):
        for name in inputs:
            inputs[name].append(part.train.windows.columns[name][window, end - 1 - context : end - 1])
    inputs = {name: widened(torch.stack(rows)) for name, rows in inputs.items()}
    padding = (
        torch.tensor([int(raw.left_pad_lengths[w]) for w in windows]) - (torch.tensor(ends) - 1 - context)
    ).clamp(min=0)
    with torch.no_grad():
        outputs = trainer.network(part.interface, inputs, padding if bool(padding.any()) else None)
    class_ids = trainer.network.interfaces[part.interface].decoder.class_ids("event").tolist()

    event_losses, amount_losses, padded, outside = [], [], 0, 0
    for row, (window, end) in enumerate(zip(windows, ends)):
        for position in range(context):
            slot = end - context + position
            item = int(raw.start_item_positions[window]) + slot
            assert slot >= 0
            if slot < int(raw.left_pad_lengths[window]):
                padded += 1
                continue
            if not int(raw.split_start_item_positions[window]) <= item < int(raw.split_end_item_positions[window]):
                outside += 1
                continue
            event = int(raw.columns["event"][window, slot])
            logits = outputs["event"][row, position]
            event_losses.append(float(F.cross_entropy(logits[None], torch.tensor([class_ids.index(event)]))))
            amount = float(raw.columns["amount"][window, slot])
            amount_losses.append((float(outputs["amount"][row, position]) - amount) ** 2)
    assert padded > 0
    assert int(sums["event"][1]) == len(event_losses) == len(windows) * context - padded - outside
    assert int(sums["amount"][1]) == len(amount_losses)
    expected = sum(event_losses) / len(event_losses) + sum(amount_losses) / len(amount_losses)
    assert math.isclose(float(loss.detach()), expected, rel_tol=1e-5)
