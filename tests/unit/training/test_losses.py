"""Per-target losses count only valid, predictable targets; the persistence baseline is calibrated."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from sequifier.config.network import ColumnSpec
from sequifier.training.losses import TargetLosses, persistence_loss_categorical


def test_special_token_and_invalid_targets_do_not_count():
    event = ColumnSpec("event", "categorical", 6)
    class_ids = torch.tensor([3, 4, 5])
    losses = TargetLosses([event], {"event": "CrossEntropyLoss"}, {}, {"event": class_ids})
    logits = torch.randn(1, 4, 3)
    targets = torch.tensor([[4, 1, 5, 3]])
    valid = torch.tensor([[True, True, True, False]])
    total, count = losses.sums({"event": logits}, {"event": targets}, valid)["event"]
    expected = F.cross_entropy(logits[0, [0, 2]], torch.tensor([1, 2]), reduction="sum")
    assert int(count) == 2
    assert torch.allclose(total, expected)


def test_loss_weights_scale_the_aggregate():
    a, b = ColumnSpec("a", "real"), ColumnSpec("b", "real")
    losses = TargetLosses([a, b], {"a": "MSELoss", "b": "L1Loss"}, {"b": 0.0}, {})
    assert losses.aggregate({"a": 2.0, "b": 5.0}) == 2.0


def test_persistence_baseline_matches_its_definition():
    repeats, total, classes = 30, 100, 10
    p = 0.3
    expected = -(0.3 * math.log(p) + 0.7 * math.log(0.7 / 9))
    assert math.isclose(persistence_loss_categorical(repeats, total, classes), expected)


def test_targets_without_a_last_class_get_every_class_alike_and_leave_the_repeat_rate_alone():
    """After the window's padding (or a value no class stands for) the forecast is uniform over the classes; the
    repeat rate is fitted on the targets that have a last class."""
    repeats, preceded, unprecedented, classes = 30, 100, 20, 6
    p = repeats / preceded
    expected = (
        -(repeats * math.log(p) + (preceded - repeats) * math.log((1 - p) / 5)) + unprecedented * math.log(classes)
    ) / (preceded + unprecedented)
    baseline = persistence_loss_categorical(repeats, preceded + unprecedented, classes, unprecedented)
    assert math.isclose(baseline, expected)
    assert math.isclose(persistence_loss_categorical(0, 5, classes, 5), math.log(classes))
