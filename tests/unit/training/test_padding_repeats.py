"""Views a distributed rank repeats to match the other ranks' step count never count: not in the training loss,
not in validation totals, not in class shares."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import REFERENCE_DIR, tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.data.datasets import SplitData, load_parts
from sequifier.distributed.ranks import Ranks
from sequifier.distributed.sharding import rank_range
from sequifier.model.network import build_network
from sequifier.training.class_shares import predicted_class_counts
from sequifier.training.evaluation import evaluate_split
from sequifier.training.losses import TargetLosses


def with_repeats(split: SplitData, repeats: int) -> SplitData:
    """`split` padded as a short rank is: its first views again, marked invalid."""
    again = torch.arange(repeats)
    valid = torch.cat([torch.ones(len(split), dtype=torch.bool), torch.zeros(repeats, dtype=torch.bool)])
    return dataclasses.replace(
        split,
        window_index=torch.cat([split.window_index, split.window_index[again]]),
        end_slot=torch.cat([split.end_slot, split.end_slot[again]]),
        shuffle_blocks=(*split.shuffle_blocks, repeats),
        view_valid=valid,
    )


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> tuple:
    folder = tmp_path_factory.mktemp("padding")
    spec = resolve(canonical_config(tiny_train_config()), run_dir=folder, cwd=REFERENCE_DIR)
    (part,) = load_parts(spec).values()
    torch.manual_seed(0)
    network = build_network(spec.network).eval()
    interface = spec.config.model.interfaces[part.interface]
    targets = [spec.columns[part.interface][t] for t in interface.target_columns]
    decoder = network.interfaces[part.interface].decoder
    class_ids = {t.name: decoder.class_ids(t.name) for t in targets if t.kind == "categorical"}
    losses = TargetLosses(targets, {"event": "CrossEntropyLoss", "amount": "MSELoss"}, {}, class_ids)
    return spec, part, network, losses


def test_validation_totals_ignore_repeats(loaded):
    spec, part, network, losses = loaded
    arguments = (part.shape, part.input_columns, losses, 32, torch.device("cpu"))
    plain = evaluate_split(network, part.interface, part.validation, *arguments)
    padded = evaluate_split(network, part.interface, with_repeats(part.validation, 13), *arguments)
    assert padded.count == plain.count
    for target in plain.loss:
        assert padded.loss[target] == pytest.approx(plain.loss[target], rel=1e-6)
    assert padded.repeats == plain.repeats and padded.baseline.keys() == plain.baseline.keys()


def test_training_batches_and_class_shares_ignore_repeats(loaded):
    spec, part, network, losses = loaded
    padded = dataclasses.replace(part, train=with_repeats(part.train, 9), validation=with_repeats(part.validation, 9))
    real = torch.arange(len(part.train))
    repeated = torch.arange(len(part.train), len(part.train) + 9)
    assert padded.training_batch(real).target_valid.equal(part.training_batch(real).target_valid)
    assert not padded.training_batch(repeated).target_valid.any()
    classes = {"event": spec.columns[part.interface]["event"].n_classes}
    plain = predicted_class_counts(network, [part], classes, 32, torch.device("cpu"))
    assert predicted_class_counts(network, [padded], classes, 32, torch.device("cpu"))["event"].equal(plain["event"])


def test_ranks_take_contiguous_shares_that_differ_by_at_most_one_window():
    shares = [rank_range(310, Ranks(rank, 3)) for rank in range(3)]
    assert shares == [(0, 103), (103, 206), (206, 310)]


def test_validation_reports_every_view_it_evaluates(loaded):
    spec, part, network, losses = loaded
    seen: list[int] = []
    evaluate_split(
        network, part.interface, part.validation, part.shape, part.input_columns, losses, 32, torch.device("cpu"),
        on_batch=seen.append,
    )  # fmt: skip
    assert sum(seen) == len(part.validation) and max(seen) == 32
